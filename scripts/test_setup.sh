#!/usr/bin/env bash
# System packages the tests use: bubblewrap (sandbox tests) and Chromium (report tests).
# Installed once per machine; a machine without apt or root skips them and those tests skip.
set -u
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "test_setup: cannot install ${need[*]} (needs root and apt-get); their tests will skip" >&2
    exit 0
fi
echo "test_setup: installing ${need[*]}" >&2
apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null \
    || echo "test_setup: installing ${need[*]} failed; their tests will skip" >&2
exit 0
