// The sign-in page: trade the one-time code in the link's fragment (never sent to a server,
// never in a log or a Referer) for the session cookie, then go to the page.
"use strict";
(async () => {
  const status = document.getElementById("signin-status");
  const code = new URLSearchParams(location.hash.slice(1)).get("code");
  history.replaceState(null, "", "/signin");  // the code is used once: keep it out of history
  if (!code) {
    status.textContent = "This link has no sign-in code: run `hookd open` and use the link it prints.";
    return;
  }
  try {
    const r = await fetch("/web/session", {
      method: "POST",
      headers: {"content-type": "application/json", "x-hookd-web": "1"},
      body: JSON.stringify({code}),
      credentials: "same-origin",
    });
    if (r.ok) {
      location.replace("/");
      return;
    }
    const body = await r.json().catch(() => null);
    status.textContent = (body && body.error && body.error.message) || `Sign-in failed (HTTP ${r.status}).`;
  } catch (e) {
    status.textContent = "hookd is not reachable: is `hookd serve` running?";
  }
  status.classList.add("error");
})();
