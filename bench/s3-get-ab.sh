#!/usr/bin/env bash
# A/B of two cowkit builds' GET path against VersityGW, with curl: three
# gateways on one directory's filesystem, the same object in each, then N
# rounds of one `curl -o /dev/null` per gateway (order rotating), medians.
# For a change to the body path; bench/s3-get.sh is the full comparison.
#
#   bench/s3-get-ab.sh COWKIT_A COWKIT_B
#
# Environment: SIZE=256M (object), N=21 (rounds), DIR=/var/tmp/cowkit-s3-ab
# (scratch; needs 4 x SIZE free), VERSITYGW (default: PATH or ~/go/bin),
# PY (python with boto3; default: .venv/bin/python of this repo), OUT (a
# file to append the result to).
set -euo pipefail
A=$1 B=$2
REPO=$(cd "$(dirname "$0")/.." && pwd)
SIZE=${SIZE:-256M} N=${N:-21} DIR=${DIR:-/var/tmp/cowkit-s3-ab}
PY=${PY:-$REPO/.venv/bin/python}
VGW=${VERSITYGW:-$(command -v versitygw || echo "$HOME/go/bin/versitygw")}
AK=abbenchak SK=abbenchsecretkey
rm -rf "$DIR"; mkdir -p "$DIR"/a "$DIR"/b "$DIR"/vg
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$DIR"' EXIT
"$A" s3 serve --root "$DIR/a" --listen 127.0.0.1:19301 --access-key $AK --secret-key $SK >"$DIR/a.log" 2>&1 & pids+=($!)
"$B" s3 serve --root "$DIR/b" --listen 127.0.0.1:19302 --access-key $AK --secret-key $SK >"$DIR/b.log" 2>&1 & pids+=($!)
"$VGW" --access $AK --secret $SK --port 127.0.0.1:19303 posix "$DIR/vg" >"$DIR/vg.log" 2>&1 & pids+=($!)
sleep 2
head -c "$SIZE" /dev/urandom >"$DIR/src"
"$PY" - "$DIR/src" "$DIR/urls" <<'PY'
import sys, boto3
from botocore.config import Config
urls = []
for port in (19301, 19302, 19303):
    c = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", aws_access_key_id="abbenchak",
                     aws_secret_access_key="abbenchsecretkey", region_name="us-east-1",
                     config=Config(signature_version="s3v4"))
    c.create_bucket(Bucket="abbench")
    c.upload_file(sys.argv[1], "abbench", "obj")
    urls.append(c.generate_presigned_url("get_object", Params={"Bucket": "abbench", "Key": "obj"}, ExpiresIn=3600))
open(sys.argv[2], "w").write("\n".join(urls) + "\n")
PY
mapfile -t urls <"$DIR/urls"
for u in "${urls[@]}"; do curl -sS --fail -o /dev/null "$u"; done
names=(A B VersityGW)
: >"$DIR/times"
for r in $(seq 0 $((N - 1))); do
  for k in 0 1 2; do
    i=$(((r + k) % 3))
    echo "$i $(curl -sS --fail -o /dev/null -w '%{time_total}' "${urls[$i]}")" >>"$DIR/times"
  done
done
{
  echo "s3-get-ab $(date -u +%FT%TZ): curl of one $SIZE object, $N rounds, order rotating; load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "A: $A ($("$A" --version)); B: $B ($("$B" --version)); VersityGW: $("$VGW" --version | head -1)"
  for i in 0 1 2; do
    awk -v i=$i '$1 == i { print $2 }' "$DIR/times" | sort -n |
      awk -v n="${names[$i]}" '{ a[NR] = $1 } END { printf "%s: median %.3f s, min %.3f s, max %.3f s\n", n, (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2), a[1], a[NR] }'
  done
} | tee -a "${OUT:-/dev/null}"
