#!/usr/bin/env bash
# Render an HTML report page to PNG with headless Chromium, to look at it as a reader would.
# Usage: bench/screenshot_report.sh PAGE.html OUT.png [WIDTHxHEIGHT]   (default 1200x1600)
# Needs Chromium (Debian: apt-get install -y chromium). Offline: every network feature is off.
set -euo pipefail
if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 PAGE.html OUT.png [WIDTHxHEIGHT]" >&2
  exit 2
fi
page=$(realpath "$1")
out=$(realpath -m "$2")
size=${3:-1200x1600}
[[ -f "$page" ]] || { echo "$0: no such page: $page" >&2; exit 2; }
[[ "$size" =~ ^[0-9]+x[0-9]+$ ]] || { echo "$0: size must be WIDTHxHEIGHT, got $size" >&2; exit 2; }
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[[ -n "$browser" ]] || { echo "$0: no chromium found (apt-get install -y chromium)" >&2; exit 3; }
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
mkdir -p "$(dirname "$out")"
rm -f "$out"
"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --hide-scrollbars --user-data-dir="$profile" --screenshot="$out" \
  --window-size="${size/x/,}" "file://$page" >/dev/null 2>&1 || true
[[ -s "$out" ]] || { echo "$0: chromium wrote no screenshot to $out" >&2; exit 1; }
echo "$out"
