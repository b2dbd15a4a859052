# Sourced: `start_seaweedfs DIR BUCKET` starts a real SeaweedFS (`make test-deps`) on free loopback
# ports with its data in DIR: a writer identity ($key, $secret) and anonymous reads, as on a
# public bucket behind a CDN. Sets $s3 (the endpoint) and $weed_pid (the caller stops it), and
# makes BUCKET, written to once (SeaweedFS grows a bucket's volumes on its first write). Returns 1
# when there is no SeaweedFS, or it could not be started or given its bucket (its log is in DIR).
weed=${ATTACHE_WEED:-.build/tools/bin/weed}

start_seaweedfs() {  # dir, bucket
  local dir=$1 bucket=$2 p attempt
  [ -x "$weed" ] || { echo "no SeaweedFS at $weed: run make test-deps" >&2; return 1; }
  key=AKIDATTACHE secret=attache-test-secret
  mkdir -p "$dir"
  cat > "$dir/s3.json" <<JSON
{"identities": [{"name": "attache", "credentials": [{"accessKey": "$key", "secretKey": "$secret"}],
  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}, {"name": "anonymous", "actions": ["Read"]}]}
JSON
  # A port is free when chosen, not when weed binds it: one that exits before it answers ("bind:
  # address already in use") is started again on new ports, with a data directory of its own.
  for attempt in 1 2 3; do
    read -r -a p <<< "$(python3 -c '
import socket
ss = [socket.socket() for _ in range(8)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')"
    s3=http://127.0.0.1:${p[6]}
    mkdir -p "$dir/data-$attempt"
    "$weed" server -ip=127.0.0.1 -ip.bind=127.0.0.1 -dir="$dir/data-$attempt" -master.port="${p[0]}" -master.port.grpc="${p[1]}" \
      -volume.port="${p[2]}" -volume.port.grpc="${p[3]}" -filer.port="${p[4]}" -filer.port.grpc="${p[5]}" \
      -s3 -s3.port="${p[6]}" -s3.port.grpc="${p[7]}" -s3.port.iceberg=0 -s3.port.lance=0 -s3.config="$dir/s3.json" \
      -master.volumeSizeLimitMB=64 -volume.max=8 > "$dir/weed.log" 2>&1 &
    weed_pid=$!
    for _ in $(seq 120); do
      curl -s -o /dev/null "$s3/" && break
      kill -0 "$weed_pid" 2>/dev/null || break
      sleep 0.5
    done
    kill -0 "$weed_pid" 2>/dev/null && break
    echo "SeaweedFS exited before it answered (attempt $attempt); its log ended:" >&2
    tail -n 5 "$dir/weed.log" >&2
  done
  kill -0 "$weed_pid" 2>/dev/null || return 1
  # The S3 port answers before the filer behind it is ready: each request is tried again on an error.
  local retry=(--retry 10 --retry-all-errors --retry-delay 1)
  curl -sSf -o /dev/null "${retry[@]}" -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" --user "$key:$secret" "$s3/$bucket" &&
  curl -sSf -o /dev/null "${retry[@]}" -X PUT --data-binary x -H "x-amz-content-sha256: $(printf x | sha256sum | cut -c1-64)" \
    --aws-sigv4 "aws:amz:us-east-1:s3" --user "$key:$secret" "$s3/$bucket/warm-up"
}
