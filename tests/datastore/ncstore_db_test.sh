#!/usr/bin/env bash
# ncstore-db round trip: import a document, export it back (XML and JSON), back up, check the
# backup, and refuse a corrupt store with the backup's path in the message. Under umask 0: the data
# directory it creates is 0700, the store, the backup and an export 0600, and a data directory
# others can write is refused.
set -euo pipefail
db_tool=$1
gen=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mode_is() { [ "$(stat -c %a "$1")" = "$2" ] || fail "$1 has mode $(stat -c %a "$1"), not $2"; }
umask 000

/usr/bin/python3 "$gen" interfaces -n 50 -o "$dir/in.xml"
"$db_tool" --data-dir "$dir/data" import "$dir/in.xml" | grep -q "imported" || fail "import"
mode_is "$dir/data" 700
mode_is "$dir/data/ncstore.db" 600
"$db_tool" --data-dir "$dir/data" export -o "$dir/out.xml"
mode_is "$dir/out.xml" 600
[ "$(grep -o '<interface>' "$dir/out.xml" | wc -l)" -eq 50 ] || fail "export has not 50 interfaces"
json=$("$db_tool" --data-dir "$dir/data" export --format json)
grep -q '"ietf-interfaces:interfaces"' <<<"$json" || fail "json export"
# the startup datastore is independent
[ -z "$("$db_tool" --data-dir "$dir/data" export --datastore startup)" ] || fail "startup not empty"
"$db_tool" --data-dir "$dir/data" backup "$dir/data/ncstore.db.backup-1" | grep -q "backed up" || fail "backup"
mode_is "$dir/data/ncstore.db.backup-1" 600
# a data directory others can write is refused, by every command
chmod 0777 "$dir/data"
for cmd in check export backup "import $dir/in.xml"; do
    # shellcheck disable=SC2086
    if out=$("$db_tool" --data-dir "$dir/data" $cmd 2>&1); then fail "$cmd accepted a 0777 data dir"; fi
    echo "$out" | grep -q "refusing the directory $dir/data (mode 0777).*chmod go-w" || fail "$cmd: $out"
done
chmod 0700 "$dir/data"
mkdir -m 0700 "$dir/restored" && cp "$dir/data/ncstore.db.backup-1" "$dir/restored/ncstore.db"
"$db_tool" --data-dir "$dir/restored" check | grep -q ": ok" || fail "check of the backup"
"$db_tool" --data-dir "$dir/restored" export | diff - "$dir/out.xml" || fail "backup differs"
# a corrupt store is refused, naming the newest backup
rm -f "$dir/data/ncstore.db-wal" "$dir/data/ncstore.db-shm"
head -c 8192 /dev/urandom > "$dir/data/ncstore.db"
if out=$("$db_tool" --data-dir "$dir/data" check 2>&1); then fail "corrupt store accepted: $out"; fi
echo "$out" | grep -q "ncstore.db.backup-1" || fail "message does not name the backup: $out"
echo "ncstore-db: 1 passed, 0 failed"
