#!/usr/bin/env bash
# make demo: start a throwaway etcd (TLS, client certificates) and
# kube-apiserver, both built from the Go module proxy into the Go build cache,
# reproduce a stuck-namespace incident, and run regghost on it.
# KEEP=1 leaves the cluster running and prints how to reach it.
set -euo pipefail
cd "$(dirname "$0")/.."
for t in openssl curl python3; do
  command -v "$t" >/dev/null || { echo "demo: $t is needed (apt-get install -y $t)" >&2; exit 1; }
done

echo "==> building regghost, etcd, etcdctl, kube-apiserver and kube-controller-manager"
echo "    (cached in the Go build cache after the first run)"
mkdir -p bin
go build -o bin/regghost .
ETCD=$(cd e2e/tools/etcd && go tool -n etcd)
ETCDCTL_BIN=$(cd e2e/tools/etcd && go tool -n etcdctl)
APISERVER=$(cd e2e/tools/kube-apiserver && go tool -n kube-apiserver)
KCM=$(cd e2e/tools/kube-apiserver && go tool -n kube-controller-manager)

DIR=${DEMO_DIR:-$(mktemp -d /tmp/regghost-demo.XXXXXX)}
mkdir -p "$DIR"
pids=()
cleanup() {
  if [ "${KEEP:-0}" = 1 ]; then
    echo "==> cluster left running (KEEP=1): etcd pid ${pids[0]:-}, kube-apiserver pid ${pids[1]:-}, kube-controller-manager pid ${pids[2]:-}; state in $DIR"
    return
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for _ in $(seq 1 20); do
    alive=0; for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break; sleep 0.5
  done
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$DIR"
}
trap cleanup EXIT

echo "==> throwaway CA and certificates in $DIR"
cd "$DIR"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=regghost-demo-ca \
  -keyout ca.key -out ca.crt 2>/dev/null
cat > ext.cnf <<'EXT'
subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth,clientAuth
EXT
for n in server client; do
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=$n -keyout $n.key -out $n.csr 2>/dev/null
  openssl x509 -req -in $n.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile ext.cnf -out $n.crt 2>/dev/null
done
openssl ecparam -name prime256v1 -genkey -noout -out sa.key 2>/dev/null
openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
echo "demo-token,admin,admin,system:masters" > tokens.csv
cd - >/dev/null

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 20000)); }
EP=https://127.0.0.1:$(port); PEER=http://127.0.0.1:$(port); APIPORT=$(port); METRICSPORT=$(port)

echo "==> starting etcd on $EP"
"$ETCD" --name demo --data-dir "$DIR/etcd" --listen-client-urls "$EP" --advertise-client-urls "$EP" \
  --listen-peer-urls "$PEER" --initial-advertise-peer-urls "$PEER" --initial-cluster "demo=$PEER" \
  --cert-file "$DIR/server.crt" --key-file "$DIR/server.key" --trusted-ca-file "$DIR/ca.crt" --client-cert-auth \
  --log-level warn >"$DIR/etcd.log" 2>&1 &
pids+=($!)

echo "==> starting kube-apiserver on https://127.0.0.1:$APIPORT"
"$APISERVER" --etcd-servers "$EP" --etcd-cafile "$DIR/ca.crt" --etcd-certfile "$DIR/client.crt" --etcd-keyfile "$DIR/client.key" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APIPORT" --cert-dir "$DIR/apiserver" \
  --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$DIR/sa.pub" \
  --service-account-signing-key-file "$DIR/sa.key" --token-auth-file "$DIR/tokens.csv" --authorization-mode AlwaysAllow \
  --service-cluster-ip-range 10.0.0.0/24 --disable-admission-plugins ServiceAccount --endpoint-reconciler-type none \
  >"$DIR/apiserver.log" 2>&1 &
pids+=($!)

API=https://127.0.0.1:$APIPORT
kc() { curl -sfk -H "Authorization: Bearer demo-token" -H "Content-Type: application/json" "$@"; }
for _ in $(seq 1 360); do kc "$API/readyz" >/dev/null 2>&1 && break; sleep 0.5; done
kc "$API/readyz" >/dev/null || { echo "demo: kube-apiserver did not start; see $DIR/apiserver.log" >&2; KEEP=1; exit 1; }

cat > "$DIR/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: demo, cluster: {server: "$API", insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: demo-token}}]
contexts: [{name: demo, context: {cluster: demo, user: admin}}]
current-context: demo
KC
echo "==> starting kube-controller-manager (PersistentVolume controller with the hostPath provisioner, garbage collector)"
"$KCM" --kubeconfig "$DIR/kubeconfig" --leader-elect=false --secure-port=0 --enable-hostpath-provisioner \
  --controllers persistentvolume-binder-controller,garbage-collector-controller >"$DIR/kcm.log" 2>&1 &
pids+=($!)

export ETCDCTL_ENDPOINTS=$EP ETCDCTL_CACERT=$DIR/ca.crt ETCDCTL_CERT=$DIR/client.crt ETCDCTL_KEY=$DIR/client.key
export KUBECONFIG=$DIR/kubeconfig

echo "==> creating namespaces kb-system and web, pods, a configmap, a secret and a Widget custom resource"
for ns in kb-system web; do kc -XPOST "$API/api/v1/namespaces" -d "{\"metadata\":{\"name\":\"$ns\"}}" >/dev/null; done
for p in controller-0 controller-1; do
  kc -XPOST "$API/api/v1/namespaces/kb-system/pods" -d "{\"metadata\":{\"name\":\"$p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}" >/dev/null
done
kc -XPOST "$API/api/v1/namespaces/web/pods" -d '{"metadata":{"name":"frontend"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}' >/dev/null
kc -XPOST "$API/api/v1/namespaces/kb-system/configmaps" -d '{"metadata":{"name":"settings"},"data":{"mode":"ha"}}' >/dev/null
kc -XPOST "$API/api/v1/namespaces/kb-system/secrets" -d '{"metadata":{"name":"db-password"},"stringData":{"password":"hunter2"}}' >/dev/null
kc -XPOST "$API/apis/apiextensions.k8s.io/v1/customresourcedefinitions" -d '{"metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}' >/dev/null
for _ in $(seq 1 240); do kc -XPOST "$API/apis/example.com/v1/namespaces/kb-system/widgets" -d '{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"blue"}}' >/dev/null 2>&1 && break; sleep 0.5; done

echo "==> a claim in kb-system on a hostPath volume whose reclaim policy is Delete, with data in it"
kc -XPOST "$API/apis/storage.k8s.io/v1/storageclasses" -d '{"metadata":{"name":"hostpath"},"provisioner":"kubernetes.io/host-path","reclaimPolicy":"Delete","volumeBindingMode":"Immediate"}' >/dev/null
kc -XPOST "$API/api/v1/namespaces/kb-system/persistentvolumeclaims" -d '{"metadata":{"name":"data"},"spec":{"storageClassName":"hostpath","accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Mi"}}}}' >/dev/null
PV=""
for _ in $(seq 1 240); do
  PV=$(kc "$API/api/v1/namespaces/kb-system/persistentvolumeclaims/data" | python3 -c 'import json,sys; print(json.load(sys.stdin)["spec"].get("volumeName",""))' 2>/dev/null || true)
  [ -n "$PV" ] && break; sleep 0.5
done
VOLDIR=$(kc "$API/api/v1/persistentvolumes/$PV" | python3 -c 'import json,sys; print(json.load(sys.stdin)["spec"]["hostPath"]["path"])')
echo "the only copy" > "$VOLDIR/precious.db"
echo "claim kb-system/data is bound to $PV"
echo "its data is in $VOLDIR"

echo "==> starting regghost serve (the read-only exporter Prometheus scrapes) every 2s on 127.0.0.1:$METRICSPORT"
METRICS=http://127.0.0.1:$METRICSPORT/metrics
bin/regghost serve --interval 2s --listen-address "127.0.0.1:$METRICSPORT" >"$DIR/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$METRICSPORT/readyz" >/dev/null 2>&1 && break; sleep 0.5; done
curl -sf "http://127.0.0.1:$METRICSPORT/readyz" >/dev/null || { echo "demo: regghost serve did not start; see $DIR/serve.log" >&2; KEEP=1; exit 1; }
scans() { curl -sf "$METRICS" 2>/dev/null | awk '$1 == "regghost_scans_total" {print $2}' || true; }
# exporter waits for two more scan cycles, then prints the exporter's lines
# about kb-system.
exporter() {
  local n0 n
  n0=$(scans); n0=${n0:-0}
  for _ in $(seq 1 120); do
    n=$(scans); n=${n:-0}
    [ "$n" -ge $((n0 + 2)) ] && break
    sleep 0.5
  done
  echo; echo "\$ curl -s $METRICS | grep -E '^regghost_(objects|ghosts|dangling_references)\{.*kb-system|^regghost_(last_scan_success|keys_scanned) '"
  curl -sf "$METRICS" | grep -E '^regghost_(objects|ghosts|dangling_references)\{.*kb-system|^regghost_(last_scan_success|keys_scanned) ' || true
}
exporter

echo "==> the incident: someone force-deletes the namespace key and the CRD key straight from etcd"
# etcdctl del prints how many keys it deleted: not part of the story.
"$ETCDCTL_BIN" del /registry/namespaces/kb-system >/dev/null
"$ETCDCTL_BIN" del /registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com >/dev/null
# kube-apiserver stops serving widgets once its watch sees the CRD key gone.
for _ in $(seq 1 120); do kc "$API/apis/example.com/v1" 2>/dev/null | grep -q "\"widgets\"" || break; sleep 0.5; done

# run shows a command and its exit code; stdin is not a terminal, so the
# destructive steps need --yes.
run() { echo; echo "\$ $*"; "$@" </dev/null || echo "(exit code $?)"; }
R=bin/regghost
run $R scan
echo; echo "==> when were the ghosts made? etcd's history of the namespace: its key's delete, and what was left in it"
run $R history --namespace kb-system
echo; echo "==> the exporter's numbers for kb-system (what Prometheus would scrape and alert on)"
exporter
echo; echo "\$ $R scan --namespace kb-system -o json > $DIR/plan.json"
$R scan --namespace kb-system -o json > "$DIR/plan.json" || true
echo "($(grep -c '"key"' "$DIR/plan.json") findings written; review them, then purge exactly those with --from)"
run $R get /registry/pods/kb-system/controller-0
if $R purge --help >/dev/null 2>&1; then
  export REGGHOST_BACKUP_DIR=$DIR/backups
  run $R purge --namespace kb-system
  run $R purge --namespace kb-system --from "$DIR/plan.json" --confirm --yes
  run $R purge --namespace kb-system --from "$DIR/plan.json" --confirm --yes --retain-volumes
  echo; echo "\$ cat $VOLDIR/precious.db   # the volume and its data are still there"; cat "$VOLDIR/precious.db"
  echo; echo "==> the exporter after the purge: kb-system's ghosts are gone (the retained volume still points at the purged claim)"
  exporter
  run $R backup ls
  echo; echo "==> after the purge: no ghost left in kb-system; the volume kept on purpose still points at the purged claim"
  run $R scan --namespace kb-system
  run $R purge --namespace kb-system
  backup=$(ls -d "$DIR"/backups/*/ | head -1)
  run $R backup show "$backup"
  run $R restore "$backup" --confirm --yes
  for _ in $(seq 1 60); do
    phase=$(kc "$API/api/v1/persistentvolumes/$PV" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"]["phase"])' 2>/dev/null || true)
    [ "$phase" = Bound ] && break; sleep 0.5
  done
  echo; echo "\$ curl .../api/v1/persistentvolumes/$PV   # bound again to the restored claim"
  kc "$API/api/v1/persistentvolumes/$PV" | python3 -c 'import json,sys; pv=json.load(sys.stdin); print(pv["status"]["phase"], pv["spec"]["persistentVolumeReclaimPolicy"], pv["spec"]["claimRef"]["namespace"]+"/"+pv["spec"]["claimRef"]["name"])'
  rm -rf "$VOLDIR"
  run $R scan --namespace kb-system
fi
