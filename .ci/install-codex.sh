#!/usr/bin/env bash
# Install the pinned Codex CLI release for hookd's end-to-end tests.
#
# Idempotent: reuses the cache when the pinned binary is already there.
# Works with no stdin, as root, with CI=true. The LAST line printed on stdout is
# the absolute path of the native Codex binary; everything else goes to stderr.
#
# Env:
#   HOOKD_CODEX_CACHE    cache folder (default: $HOME/.cache/hookd-codex)
#   HOOKD_CODEX_VERSION  version to pin (default: 0.171.0; tests are pinned to it)
set -euo pipefail
exec </dev/null

VERSION="${HOOKD_CODEX_VERSION:-0.171.0}"
CACHE="${HOOKD_CODEX_CACHE:-$HOME/.cache/hookd-codex}"
WRAPPER="$CACHE/node_modules/@openai/codex/bin/codex.js"

log() { printf '[install-codex] %s\n' "$*" >&2; }
# (the npm step both harness installs share)
. "$(dirname "$0")/npm-pinned.sh"

case "$(uname -m)" in
    x86_64|amd64) ARCH=x64; TRIPLE=x86_64-unknown-linux-musl ;;
    aarch64|arm64) ARCH=arm64; TRIPLE=aarch64-unknown-linux-musl ;;
    *) log "unsupported machine $(uname -m)"; exit 1 ;;
esac
# The wrapper package (@openai/codex) is a node script that runs the platform
# package's native binary; npm installs that package under this alias.
NATIVE="$CACHE/node_modules/@openai/codex-linux-$ARCH/vendor/$TRIPLE/bin/codex"

have_version() {
    # $1: binary; true when it runs and reports the pinned version ("codex-cli 0.171.0").
    [ -x "$1" ] || return 1
    local out
    out="$("$1" --version 2>/dev/null </dev/null || true)"
    case "$out" in *" $VERSION"|"$VERSION") return 0 ;; esac
    return 1
}

find_bin() {
    # The native binary first: it needs no node at run time and starts faster.
    if have_version "$NATIVE"; then
        printf '%s\n' "$NATIVE"
        return 0
    fi
    if have_version "$WRAPPER"; then
        printf '%s\n' "$WRAPPER"
        return 0
    fi
    return 1
}

if BIN="$(find_bin)"; then
    log "Codex $VERSION already installed in $CACHE"
else
    npm_install_pinned "$CACHE" "@openai/codex@$VERSION" || exit 1
    if ! BIN="$(find_bin)"; then
        log "installed, but no working Codex $VERSION binary under $CACHE"
        log "looked for: $NATIVE and $WRAPPER"
        exit 1
    fi
fi

printf '%s\n' "$BIN"
