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
    if ! command -v npm >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        log "npm missing: installing nodejs and npm with apt-get"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2
        apt-get install -y -qq nodejs npm >&2
    fi
    command -v npm >/dev/null 2>&1 || { log "npm not found"; exit 1; }
    mkdir -p "$CACHE"
    if [ ! -f "$CACHE/package.json" ]; then
        printf '{\n  "name": "hookd-codex-cache",\n  "private": true\n}\n' >"$CACHE/package.json"
    fi
    log "installing @openai/codex@$VERSION into $CACHE"
    # --include=optional: the native binary is an optional platform dependency.
    (cd "$CACHE" && npm install --no-audit --no-fund --no-progress --save-exact \
        --include=optional "@openai/codex@$VERSION" >&2)
    if ! BIN="$(find_bin)"; then
        log "installed, but no working Codex $VERSION binary under $CACHE"
        log "looked for: $NATIVE and $WRAPPER"
        exit 1
    fi
fi

printf '%s\n' "$BIN"
