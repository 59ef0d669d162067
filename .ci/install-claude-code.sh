#!/usr/bin/env bash
# Install the pinned Claude Code release (and tmux) for hookd's end-to-end tests.
#
# Idempotent: reuses the cache when the pinned binary is already there.
# Works with no stdin, as root, with CI=true. The LAST line printed on stdout is
# the absolute path of the native Claude Code binary; everything else goes to
# stderr.
#
# Env:
#   HOOKD_CC_CACHE    cache folder (default: $HOME/.cache/hookd-cc)
#   HOOKD_CC_VERSION  version to pin (default: 2.1.332; tests are pinned to it)
set -euo pipefail
exec </dev/null

VERSION="${HOOKD_CC_VERSION:-2.1.332}"
CACHE="${HOOKD_CC_CACHE:-$HOME/.cache/hookd-cc}"
NATIVE="$CACHE/node_modules/@anthropic-ai/claude-code-linux-x64/claude"
WRAPPED="$CACHE/node_modules/@anthropic-ai/claude-code/bin/claude.exe"

log() { printf '[install-claude-code] %s\n' "$*" >&2; }
# (the npm step both harness installs share)
. "$(dirname "$0")/npm-pinned.sh"

have_version() {
    # $1: binary; true when it runs and reports the pinned version.
    [ -x "$1" ] || return 1
    local out
    out="$("$1" --version 2>/dev/null </dev/null || true)"
    case "$out" in "$VERSION "*|"$VERSION") return 0 ;; esac
    return 1
}

find_bin() {
    # Prefer the platform package's native binary (npm 11 skips the wrapper's
    # postinstall, leaving node_modules/.bin/claude unusable).
    local candidate
    for candidate in "$NATIVE" "$WRAPPED"; do
        if have_version "$candidate"; then
            printf '%s\n' "$candidate"
            return 0
        fi
    done
    return 1
}

# --- tmux --------------------------------------------------------------------
if ! command -v tmux >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        log "tmux missing: installing it with apt-get"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2
        apt-get install -y -qq tmux >&2
    else
        log "tmux missing and apt-get unavailable (or not root): TUI tests will fail"
    fi
fi

# --- Claude Code ---------------------------------------------------------------
if BIN="$(find_bin)"; then
    log "Claude Code $VERSION already installed in $CACHE"
else
    npm_install_pinned "$CACHE" "@anthropic-ai/claude-code@$VERSION" || exit 1
    if ! BIN="$(find_bin)"; then
        log "installed, but no working Claude Code $VERSION binary under $CACHE"
        log "looked for: $NATIVE and $WRAPPED"
        exit 1
    fi
fi

printf '%s\n' "$BIN"
