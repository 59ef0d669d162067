# Sourced by .ci/install-claude-code.sh and .ci/install-codex.sh: the npm step they share.
#
# npm_install_pinned CACHE PACKAGE@VERSION
#   Installs PACKAGE@VERSION (with its optional platform dependencies: the native binaries)
#   into the folder CACHE, made a private npm project if it is not one; installs nodejs and
#   npm with apt-get first when npm is missing and this is root on Debian. npm's output goes
#   to stderr; fails (returns non-zero) when npm cannot be had or the install fails. Needs
#   the caller's `log` function.
npm_install_pinned() {
    local cache=$1 spec=$2
    if ! command -v npm >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        log "npm missing: installing nodejs and npm with apt-get"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2
        apt-get install -y -qq nodejs npm >&2
    fi
    command -v npm >/dev/null 2>&1 || { log "npm not found"; return 1; }
    mkdir -p "$cache"
    if [ ! -f "$cache/package.json" ]; then
        printf '{\n  "name": "hookd-pinned-harness",\n  "private": true\n}\n' >"$cache/package.json"
    fi
    log "installing $spec into $cache"
    # --include=optional: the native binary is an optional platform dependency.
    (cd "$cache" && npm install --no-audit --no-fund --no-progress --save-exact --include=optional "$spec" >&2)
}
