#!/usr/bin/env bash
# Packaging test: builds the .deb and the .rpm with CPack from a configured build tree, checks their
# layout and dependencies, lints the .deb, then installs the .deb on THIS machine and uses it the
# way an operator would: start the server as the unit does (as user ncstore, with the packaged
# config), log in over NETCONF/SSH with the first-start admin password and with a user added by
# `ncstored --add-user`, edit, restart, read back; upgrade to a newer version (edited conffile, store
# and host key kept); `dpkg -r` (data kept), `dpkg -P` (data gone). The .rpm is unpacked into a
# scratch root.
#
# Usage: tests/packaging/test_packages.sh BUILD_DIR   (as root; CI machines are throwaway)
# Exit: 0 pass, 1 fail, 77 cannot run here (not root, a tool missing, or ncstore already installed).
set -euo pipefail

BUILD_DIR=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
SRC_DIR=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3   # Debian's python3 with python3-ncclient (not a pyenv one)

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo; echo "=== $*"; }
ok() { echo "ok: $*"; }
# `... | grep -q` fails the pipeline under pipefail whenever grep quits before the writer is done
# (the writer dies of SIGPIPE): has() reads its whole input.
has() { grep "$@" > /dev/null; }

[ "$(id -u)" -eq 0 ] || skip "needs root (installs the .deb on this machine)"
for t in cpack dpkg dpkg-deb lintian rpm rpmbuild setpriv; do
    command -v "$t" >/dev/null || skip "$t not installed (scripts/install-deps.sh installs it)"
done
"$PY" -c 'import ncclient' 2>/dev/null || skip "python3-ncclient not installed for $PY"
[ -f "$BUILD_DIR/CPackConfig.cmake" ] || fail "$BUILD_DIR/CPackConfig.cmake missing: not a configured ncstore build"
if dpkg-query -W -f='${Status}' ncstore 2>/dev/null | has "installed\|config-files"; then
    skip "package ncstore is already on this machine: this test would replace and purge it"
fi
[ ! -e /var/lib/ncstore ] || skip "/var/lib/ncstore exists on this machine: this test would delete it"

VERSION=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$BUILD_DIR/CPackConfig.cmake")
[ -n "$VERSION" ] || fail "no CPACK_PACKAGE_VERSION in CPackConfig.cmake"
NEXT_VERSION="${VERSION}+1"
ARCH=$(dpkg --print-architecture)

WORK=$(mktemp -d /tmp/ncstore-pkgtest.XXXXXX)
chmod 0755 "$WORK"
USER_EXISTED=0
getent passwd ncstore >/dev/null && USER_EXISTED=1
SERVER_PID=""

# dpkg with a wait for its lock: other jobs on the machine may be running apt or dpkg.
dpkg_wait() {
    local out rc
    for _ in $(seq 1 60); do
        rc=0; out=$(dpkg "$@" < /dev/null 2>&1) || rc=$?
        if [ $rc -ne 0 ] && echo "$out" | has "frontend lock\|is locked by another"; then sleep 3; continue; fi
        echo "$out"
        return $rc
    done
    echo "$out"; return 1
}
installed() { dpkg-query -W -f='${Status}' ncstore 2>/dev/null | has "installed\|config-files"; }

cleanup() {
    local rc=$?
    # an early failure comes before stop_server is defined
    if declare -F stop_server > /dev/null; then stop_server quiet || true; fi
    if installed; then
        dpkg_wait -P ncstore >/dev/null 2>&1 || true
    fi
    for p in python3-ncstore libncstore-app-dev libncstore-app0; do
        if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | has "installed\|config-files"; then
            dpkg_wait -P "$p" >/dev/null 2>&1 || true
        fi
    done
    if [ "$USER_EXISTED" -eq 0 ] && ! installed && getent passwd ncstore >/dev/null; then
        userdel ncstore >/dev/null 2>&1 || true
        getent group ncstore >/dev/null && groupdel ncstore >/dev/null 2>&1 || true
    fi
    if [ $rc -ne 0 ] && [ -f "$WORK/server.log" ]; then
        echo "--- last server log"; tail -n 30 "$WORK/server.log"
    fi
    rm -rf "$WORK"
    exit $rc
}
trap cleanup EXIT

# ---------------------------------------------------------------------------------------------
step "build the packages (cpack in $BUILD_DIR)"
(cd "$BUILD_DIR" && cpack -G "DEB;RPM" -B "$WORK/pkg") > "$WORK/cpack.log" 2>&1 \
    || { cat "$WORK/cpack.log"; fail "cpack failed"; }
DEB="$WORK/pkg/ncstore_${VERSION}_${ARCH}.deb"
RPM="$WORK/pkg/ncstore-${VERSION}.$(uname -m).rpm"
[ -f "$DEB" ] || fail "no $DEB"; ok "$(basename "$DEB")"
[ -f "$RPM" ] || fail "no $RPM"; ok "$(basename "$RPM")"

step ".deb layout and control data"
dpkg-deb -c "$DEB" | awk '{print $6}' | sed 's|^\./|/|' > "$WORK/deb.files"
for f in /usr/sbin/ncstored /etc/ncstore/ncstored.conf /lib/systemd/system/ncstored.service \
         /usr/share/man/man8/ncstored.8.gz /usr/share/doc/ncstore/copyright /usr/share/ncstore/yang/ \
         /usr/sbin/ncstore-roadm-agent /usr/share/man/man8/ncstore-roadm-agent.8.gz \
         /lib/systemd/system/ncstore-roadm-agent.service /usr/share/ncstore/roadm/device.profile \
         /usr/bin/ncstore-load /usr/bin/ncstore-sim /usr/share/man/man1/ncstore-load.1.gz \
         /usr/share/man/man1/ncstore-sim.1.gz; do
    grep -qx "$f" "$WORK/deb.files" || fail ".deb lacks $f"
done
if [ -x "$BUILD_DIR/clients/ncstore-client" ]; then
    grep -qx /usr/bin/ncstore-client "$WORK/deb.files" || fail ".deb lacks /usr/bin/ncstore-client"
fi
grep -q '^/usr/share/ncstore/yang/.*\.yang$' "$WORK/deb.files" || fail ".deb has no YANG model"
if grep -E '^/usr/local|^/usr/include|\.a$|^/usr/lib/.*\.so' "$WORK/deb.files"; then
    fail ".deb carries development or misplaced files (above)"
fi
grep -q '^/var/lib/ncstore' "$WORK/deb.files" && fail ".deb ships /var/lib/ncstore (postinst creates it)"
ok "layout: $(grep -c '[^/]$' "$WORK/deb.files") files"
dpkg-deb -I "$DEB" conffiles | has -x /etc/ncstore/ncstored.conf || fail "/etc/ncstore/ncstored.conf is not a conffile"
ok "conffiles: /etc/ncstore/ncstored.conf"
DEPENDS=$(dpkg-deb -f "$DEB" Depends)
echo "Depends: $DEPENDS"
for d in libyuma-base adduser libnetconf2 libyang2 libssh libsqlite3 libboost-log; do
    echo "$DEPENDS" | has "$d" || fail ".deb does not depend on $d"
done
ok "dependencies declared"

step "lintian"
lintian --fail-on error "$DEB" > "$WORK/lintian.log" 2>&1 || { cat "$WORK/lintian.log"; fail "lintian reports errors"; }
grep -v "running with root privileges" "$WORK/lintian.log" || true
ok "lintian: no error"

step ".rpm layout, needs, scripts"
rpm -qpl "$RPM" > "$WORK/rpm.files"
for f in /usr/sbin/ncstored /etc/ncstore/ncstored.conf /usr/lib/systemd/system/ncstored.service \
         /var/lib/ncstore /usr/share/man/man8/ncstored.8.gz /usr/sbin/ncstore-roadm-agent \
         /usr/share/man/man8/ncstore-roadm-agent.8.gz /usr/lib/systemd/system/ncstore-roadm-agent.service; do
    grep -qx "$f" "$WORK/rpm.files" || fail ".rpm lacks $f"
done
ok "rpm -qpl: layout"
rpm -qpR "$RPM" > "$WORK/rpm.requires"
for r in libnetconf2 libyang libssh sqlite-libs boost-log shadow-utils; do
    grep -q "^$r" "$WORK/rpm.requires" || fail ".rpm does not require $r"
done
ok "rpm -qpR: $(grep -v '^rpmlib\|^/bin/sh\|GLIBC\|CXXABI\|GCC_' "$WORK/rpm.requires" | tr '\n' ' ')"
rpm -qpc "$RPM" | has -x /etc/ncstore/ncstored.conf || fail ".rpm: config file not marked %config"
rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$RPM" | has '^cn /etc/ncstore/ncstored.conf' \
    || fail ".rpm: config not %config(noreplace)"
rpm -qp --qf '[%{FILEUSERNAME}:%{FILEGROUPNAME} %{FILEMODES:perms} %{FILENAMES}\n]' "$RPM" \
    | has '^ncstore:ncstore drwx------ /var/lib/ncstore$' || fail ".rpm: /var/lib/ncstore not ncstore:ncstore 0700"
rpm -qp --scripts "$RPM" | has useradd || fail ".rpm: no useradd in its scripts"
for tag in PREIN POSTIN PREUN POSTUN; do
    rpm -qp --qf "%{$tag}" "$RPM" > "$WORK/scriptlet"
    [ -s "$WORK/scriptlet" ] || fail ".rpm has no $tag scriptlet"
    sh -n "$WORK/scriptlet" || fail ".rpm $tag scriptlet: shell syntax error"
done
ok "rpm: %config(noreplace), data dir owner, user creation"

step ".rpm into a scratch root"
RROOT="$WORK/rpmroot"
mkdir -p "$RROOT"
rpm --root "$RROOT" --initdb
rpm -i --root "$RROOT" --nodeps --noscripts "$RPM" > "$WORK/rpm-install.log" 2>&1 \
    || { cat "$WORK/rpm-install.log"; fail "rpm -i into scratch root failed"; }
for f in /usr/sbin/ncstored /etc/ncstore/ncstored.conf /usr/lib/systemd/system/ncstored.service \
         /usr/share/man/man8/ncstored.8.gz; do
    [ -f "$RROOT$f" ] || fail "rpm did not install $f"
done
[ -d "$RROOT/var/lib/ncstore" ] || fail "rpm did not create /var/lib/ncstore"
ls "$RROOT"/usr/share/ncstore/yang/*.yang >/dev/null || fail "rpm did not install the YANG models"
[ -x "$RROOT/usr/sbin/ncstored" ] || fail "rpm: ncstored not executable"
rpm --root "$RROOT" -q ncstore >/dev/null || fail "rpm database of the scratch root does not list ncstore"
ok "files in place under $RROOT"

# ---------------------------------------------------------------------------------------------
step "install the .deb"
export DEBIAN_FRONTEND=noninteractive
if ! dpkg_wait -i "$DEB" > "$WORK/dpkg.log" 2>&1; then
    cat "$WORK/dpkg.log"
    apt-get -o DPkg::Lock::Timeout=180 -f install -y < /dev/null || fail "dpkg -i and apt-get -f install failed"
fi
dpkg-query -W -f='${Status} ${Version}\n' ncstore | has "install ok installed $VERSION" || fail "ncstore not installed"
if grep -i "warning\|error" "$WORK/dpkg.log"; then fail "dpkg -i printed warnings (above)"; fi
getent passwd ncstore >/dev/null || fail "no ncstore user"
[ "$(stat -c '%U:%G %a' /var/lib/ncstore)" = "ncstore:ncstore 700" ] \
    || fail "/var/lib/ncstore is $(stat -c '%U:%G %a' /var/lib/ncstore), want ncstore:ncstore 700"
[ -x /usr/sbin/ncstored ] || fail "/usr/sbin/ncstored missing"
/usr/sbin/ncstored --help | has -- "--config" || fail "ncstored --help does not show --config"
man -l /usr/share/man/man8/ncstored.8.gz > /dev/null 2>&1 || [ ! -x /usr/bin/man ] || fail "the man page does not render"
/usr/sbin/ncstore-roadm-agent --help | has -- "--profile" || fail "ncstore-roadm-agent --help does not run"
man -l /usr/share/man/man8/ncstore-roadm-agent.8.gz > /dev/null 2>&1 || [ ! -x /usr/bin/man ] \
    || fail "the agent's man page does not render"
/usr/bin/ncstore-load --help | has -- "--lenient" || fail "ncstore-load --help does not run"
/usr/bin/ncstore-sim --help | has -- "start" || fail "ncstore-sim --help does not run"
for page in ncstore-load ncstore-sim; do
    man -l /usr/share/man/man1/$page.1.gz > /dev/null 2>&1 || [ ! -x /usr/bin/man ] || fail "$page's man page does not render"
done
WANTS=/etc/systemd/system/multi-user.target.wants/ncstored.service
[ -L "$WANTS" ] || fail "ncstored.service not enabled after installation (no $WANTS)"
ok "installed $VERSION; ncstore user; /var/lib/ncstore ncstore:ncstore 700; unit enabled"

UNIT=/lib/systemd/system/ncstored.service
EXEC=$(sed -n 's/^ExecStart=//p' "$UNIT")
UNIT_USER=$(sed -n 's/^User=//p' "$UNIT")
[ "$EXEC" = "/usr/sbin/ncstored --config /etc/ncstore/ncstored.conf" ] || fail "unexpected ExecStart: $EXEC"
[ "$UNIT_USER" = ncstore ] || fail "unit runs as '$UNIT_USER', want ncstore"
if command -v systemd-analyze >/dev/null; then
    systemd-analyze verify "$UNIT" > "$WORK/verify.log" 2>&1 || true
    if grep -i "ncstored.service" "$WORK/verify.log" | grep -iv "cgroup\|bus" ; then
        fail "systemd-analyze verify complains about the unit (above)"
    fi
    ok "systemd-analyze verify: no complaint about ncstored.service"
fi

# The test runs the unit's command with the packaged config copied and moved to a free loopback
# port; everything else (data dir, yang-dir, durability) is the packaged one.
TEST_CONF="$WORK/ncstored.conf"
sed -e 's/^port *=.*/port = 0/' -e 's/^listen *=.*/listen = 127.0.0.1/' /etc/ncstore/ncstored.conf > "$TEST_CONF"
echo "print-port-file = $WORK/run/port" >> "$TEST_CONF"
mkdir -p "$WORK/run" && chown ncstore:ncstore "$WORK/run"
chmod 0644 "$TEST_CONF"
TEST_EXEC=${EXEC/\/etc\/ncstore\/ncstored.conf/$TEST_CONF}

as_ncstore() { setpriv --reuid ncstore --regid ncstore --init-groups --no-new-privs -- "$@"; }

start_server() {
    rm -f "$WORK/run/port"
    # shellcheck disable=SC2086
    (umask 0027; exec setpriv --reuid ncstore --regid ncstore --init-groups --no-new-privs -- $TEST_EXEC) \
        >> "$WORK/server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 100); do
        [ -s "$WORK/run/port" ] && break
        kill -0 "$SERVER_PID" 2>/dev/null || fail "ncstored exited at start"
        sleep 0.1
    done
    [ -s "$WORK/run/port" ] || fail "ncstored wrote no port file within 10 s"
    PORT=$(cat "$WORK/run/port")
    if command -v ss >/dev/null; then
        ss -ltnH "sport = :$PORT" | has "127.0.0.1:$PORT" || fail "ncstored does not listen on 127.0.0.1:$PORT"
    fi
}
stop_server() {
    [ -n "$SERVER_PID" ] || return 0
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    local rc=0
    for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -KILL "$SERVER_PID" 2>/dev/null || true
        [ "${1:-}" = quiet ] || fail "ncstored did not stop within 10 s of SIGTERM"
    fi
    wait "$SERVER_PID" || rc=$?
    SERVER_PID=""
    [ "${1:-}" = quiet ] || [ $rc -eq 0 ] || fail "ncstored exited with status $rc on SIGTERM"
}

# NETCONF client: ACTION USER PASSWORD  (create: edit-config of the packaged example, then read;
# read: get-config of that device). Exit 0: device present, 3: device absent, 4: login refused.
netconf() {
    "$PY" - "$PORT" "$@" <<'EOF'
import sys
from ncclient import manager
from ncclient.transport.errors import AuthenticationError
port, action, user, password = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ex = "/usr/share/doc/ncstore/examples/"
try:
    m = manager.connect(host="127.0.0.1", port=port, username=user, password=password,
                        hostkey_verify=False, look_for_keys=False, allow_agent=False, timeout=30)
except AuthenticationError:
    print(f"login as {user}: refused")
    sys.exit(4)
with m:
    if action == "create":
        m.edit_config(target="running", config=open(ex + "device-create.xml").read())
    reply = m.get_config(source="running", filter=open(ex + "device-filter.xml").read())
    found = "C201-7-1A-9001" in reply.data_xml
    print(f"{action} as {user}: device C201-7-1A-9001 {'present' if found else 'absent'}")
    sys.exit(0 if found else 3)
EOF
}
netconf_rc() { local rc=0; netconf "$@" >&2 || rc=$?; echo "$rc"; }

step "first start, as the unit runs it: $EXEC (as $UNIT_USER)"
start_server
ok "listening on 127.0.0.1:$PORT"
ADMIN_PW=$(sed -n 's/.*login: admin \/ password: \([^ ]*\).*/\1/p' "$WORK/server.log" | head -n 1)
[ -n "$ADMIN_PW" ] || fail "no first-start admin password in the server output"
ok "first-start admin password printed"
[ -f /var/lib/ncstore/ncstore.db ] || fail "no /var/lib/ncstore/ncstore.db"
[ "$(stat -c %U /var/lib/ncstore/ncstore.db)" = ncstore ] || fail "the store is not owned by ncstore"
HOSTKEYS=$(find /var/lib/ncstore -maxdepth 1 -name '*key*' -type f | sort)
[ -n "$HOSTKEYS" ] || fail "no SSH host key in /var/lib/ncstore"
for k in $HOSTKEYS; do
    case $k in *.pub) continue ;; esac
    [ "$(stat -c %U "$k")" = ncstore ] || fail "$k is not owned by ncstore"
done
HOSTKEY_SUM=$(cat $HOSTKEYS | sha256sum)
ok "store and host key created in /var/lib/ncstore, owned by ncstore"
# Files at rest: what the server created (store, WAL, host keys, users) is its user's alone.
NOT_PRIVATE=$(find /var/lib/ncstore \( -type d ! -perm 0700 \) -o \( -type f ! -perm 0600 \) -printf '%m %p\n')
[ -z "$NOT_PRIVATE" ] || fail "not private in /var/lib/ncstore: $NOT_PRIVATE"
ok "/var/lib/ncstore: directories 0700, files 0600 (the unit's UMask=0027 would give 0640)"

echo "pkgtest-secret" | as_ncstore /usr/sbin/ncstored --config /etc/ncstore/ncstored.conf --add-user tester \
    >> "$WORK/server.log" 2>&1 || fail "ncstored --add-user tester failed"
ok "added user tester with ncstored --add-user (server running)"

rc=$(netconf_rc read admin "$ADMIN_PW")
[ "$rc" = 3 ] || fail "first login as admin with the printed password: want 'device absent' (3), got $rc"
ok "first login as admin with the printed password; empty store"
rc=$(netconf_rc create tester pkgtest-secret 2>/dev/null)
[ "$rc" != 0 ] || fail "tester, added without a NACM group, could write (want the RFC 8341 defaults: read only)"
ok "NACM: a user added without a group may not write"
netconf create admin "$ADMIN_PW" || fail "edit-config + get-config as admin (NACM group admin) failed"
netconf read tester pkgtest-secret || fail "get-config as tester failed"
rc=$(netconf_rc read tester wrong-password 2>/dev/null)
[ "$rc" = 4 ] || fail "login with a wrong password: want refused (4), got $rc"
ok "wrong password refused"

step "restart and read back"
stop_server
start_server
netconf read admin "$ADMIN_PW" || fail "device lost across a restart"

step "libncstore-app0 and libncstore-app-dev: an application built with pkg-config talks to the packaged server"
for p in libncstore-app0 libncstore-app-dev; do
    (cd "$BUILD_DIR" && cpack --config "packaging/CPackConfig-$p.cmake" -B "$WORK/pkgapp") > "$WORK/cpack-$p.log" 2>&1 \
        || { cat "$WORK/cpack-$p.log"; fail "cpack of $p failed"; }
done
APPDEB="$WORK/pkgapp/libncstore-app0_${VERSION}_${ARCH}.deb"
DEVDEB="$WORK/pkgapp/libncstore-app-dev_${VERSION}_${ARCH}.deb"
dpkg-deb -c "$APPDEB" | awk '{print $6}' | has -x './usr/lib/libncstore-app.so.0' || fail "$APPDEB lacks the library"
if dpkg-deb -c "$APPDEB" | awk '{print $6}' | grep -E '/include/|\.so$|pkgconfig'; then
    fail "the runtime package carries development files (above)"
fi
for f in ./usr/include/ncstore/app.hpp ./usr/lib/pkgconfig/ncstore-app.pc ./usr/lib/libncstore-app.so \
         ./usr/lib/cmake/ncstore-app/ncstore-appConfig.cmake; do
    dpkg-deb -c "$DEVDEB" | awk '{print $6}' | has -x "$f" || fail "$DEVDEB lacks $f"
done
dpkg-deb -f "$DEVDEB" Depends | has "libncstore-app0 (= $VERSION)" || fail "the -dev package does not depend on its runtime"
for p in libncstore-app0 libncstore-app-dev; do
    rpm -qpl "$WORK/pkgapp/$p-$VERSION-1.$(uname -m).rpm" > "$WORK/$p.rpmfiles" || fail "no .rpm of $p"
done
has -x /usr/lib/libncstore-app.so.0 "$WORK/libncstore-app0.rpmfiles" || fail "the runtime .rpm lacks the library"
has -x /usr/include/ncstore/app.hpp "$WORK/libncstore-app-dev.rpmfiles" || fail "the -dev .rpm lacks the header"
dpkg_wait -i "$APPDEB" "$DEVDEB" > "$WORK/dpkg-app.log" || { cat "$WORK/dpkg-app.log"; fail "dpkg -i of the library packages failed"; }
cat > "$WORK/app.cpp" <<'APP'
#include <ncstore/app.hpp>
#include <iostream>
int main(int, char** argv) {
    ncstore::app::Connection nc({.socket = argv[1], .appName = "pkgtest"});
    std::cout << "session " << nc.session() << " as " << nc.user() << std::endl;
    std::cout << nc.get(ncstore::app::Datastore::Running, "/ietf-interfaces:interfaces") << std::endl;
}
APP
# shellcheck disable=SC2046
g++ -std=c++20 -o "$WORK/app" "$WORK/app.cpp" $(pkg-config --cflags --libs ncstore-app) \
    || fail "an application does not build with pkg-config --cflags --libs ncstore-app"
"$WORK/app" /var/lib/ncstore/app.sock > "$WORK/app.out" 2>&1 || { cat "$WORK/app.out"; fail "the application could not talk to ncstored"; }
has "^session [0-9]* as admin" "$WORK/app.out" || { cat "$WORK/app.out"; fail "root's application was not mapped to admin"; }
ok "built with pkg-config, connected to /var/lib/ncstore/app.sock: $(head -n 1 "$WORK/app.out")"
dpkg_wait -P libncstore-app-dev libncstore-app0 > /dev/null || fail "dpkg -P of the library packages failed"

step "python3-ncstore: the installed Python API talks to the packaged server"
(cd "$BUILD_DIR" && cpack --config packaging/CPackConfig-python3-ncstore.cmake -B "$WORK/pkgpy") > "$WORK/cpack-py.log" 2>&1 \
    || { cat "$WORK/cpack-py.log"; fail "cpack of python3-ncstore failed"; }
PYDEB="$WORK/pkgpy/python3-ncstore_${VERSION}_all.deb"
PYRPM="$WORK/pkgpy/python3-ncstore-${VERSION}-1.noarch.rpm"
[ -f "$PYDEB" ] || fail "no $PYDEB"
[ -f "$PYRPM" ] || fail "no $PYRPM"
dpkg-deb -c "$PYDEB" | awk '{print $6}' > "$WORK/pydeb.files"
for f in __init__.py _connection.py _protocol.py _types.py aio.py; do
    has -x "./usr/lib/python3/dist-packages/ncstore/$f" "$WORK/pydeb.files" || fail "$PYDEB lacks ncstore/$f"
done
if grep -E '__pycache__|\.pyc$' "$WORK/pydeb.files"; then fail "$PYDEB carries byte-compiled files (above)"; fi
dpkg-deb -f "$PYDEB" Depends | has "python3" || fail "python3-ncstore does not depend on python3"
lintian --fail-on error "$PYDEB" > "$WORK/lintian-py.log" 2>&1 || { cat "$WORK/lintian-py.log"; fail "lintian reports errors in python3-ncstore"; }
rpm -qpl "$PYRPM" | has '^/usr/lib/python3\.[0-9]*/site-packages/ncstore/__init__\.py$' \
    || fail "the .rpm does not put ncstore into the python3 site-packages"
rpm -qpR "$PYRPM" | has '^python(abi) = 3\.' || fail "the .rpm does not require a python(abi)"
dpkg_wait -i "$PYDEB" > "$WORK/dpkg-py.log" || { cat "$WORK/dpkg-py.log"; fail "dpkg -i of python3-ncstore failed"; }
# From /, without PYTHONPATH: the package dpkg installed, not a source tree's.
cat > "$WORK/app.py" <<'PYAPP'
import sys
import ncstore
assert ncstore.__file__ == "/usr/lib/python3/dist-packages/ncstore/__init__.py", ncstore.__file__
with ncstore.connect(sys.argv[1], app_name="pkgtest-py") as conn:
    print("session %d as %s" % (conn.session, conn.user))
    sessions = conn.get("operational", "/ietf-netconf-monitoring:netconf-state/sessions")
    assert "<session-id>%d</session-id>" % conn.session in sessions, sessions
    try:
        conn.get("running", "/no-such-module:x")
        sys.exit("a read of an unknown module did not fail")
    except ncstore.Error as e:
        print("refused: %s (%s)" % (e.tag, e.message))
PYAPP
(cd / && env -u PYTHONPATH "$PY" "$WORK/app.py" /var/lib/ncstore/app.sock) > "$WORK/py.out" 2>&1 \
    || { cat "$WORK/py.out"; fail "the installed Python API could not talk to ncstored"; }
has "^session [0-9]* as admin" "$WORK/py.out" || { cat "$WORK/py.out"; fail "root's Python application was not mapped to admin"; }
has "^refused: " "$WORK/py.out" || { cat "$WORK/py.out"; fail "no ncstore.Error for a bad read"; }
ok "installed python3-ncstore, connected to /var/lib/ncstore/app.sock: $(head -n 1 "$WORK/py.out")"
dpkg_wait -P python3-ncstore > "$WORK/dpkg-py-p.log" 2>&1 || { cat "$WORK/dpkg-py-p.log"; fail "dpkg -P of python3-ncstore failed"; }
if grep -i "warning\|not empty" "$WORK/dpkg-py-p.log"; then fail "dpkg -P of python3-ncstore left files behind (above)"; fi
[ ! -e /usr/lib/python3/dist-packages/ncstore ] || fail "dpkg -P left /usr/lib/python3/dist-packages/ncstore"
stop_server
ok "device kept across restart; clean stop on SIGTERM"

# ---------------------------------------------------------------------------------------------
step "upgrade to $NEXT_VERSION (edited conffile and store must survive)"
sed -i 's/^log-level *=.*/log-level = debug/' /etc/ncstore/ncstored.conf
echo "# edited by the packaging test" >> /etc/ncstore/ncstored.conf
CONF_SUM=$(sha256sum < /etc/ncstore/ncstored.conf)
(cd "$BUILD_DIR" && cpack -G DEB -B "$WORK/pkg2" -D CPACK_PACKAGE_VERSION="$NEXT_VERSION") > "$WORK/cpack2.log" 2>&1 \
    || { cat "$WORK/cpack2.log"; fail "cpack of $NEXT_VERSION failed"; }
DEB2="$WORK/pkg2/ncstore_${NEXT_VERSION}_${ARCH}.deb"
[ -f "$DEB2" ] || fail "no $DEB2"
dpkg_wait -i "$DEB2" > "$WORK/dpkg2.log" 2>&1 || { cat "$WORK/dpkg2.log"; fail "upgrade failed"; }
dpkg-query -W -f='${Version}' ncstore | has -x "$NEXT_VERSION" || fail "upgrade did not install $NEXT_VERSION"
[ "$(sha256sum < /etc/ncstore/ncstored.conf)" = "$CONF_SUM" ] || fail "the edited /etc/ncstore/ncstored.conf was changed by the upgrade"
[ "$(cat $HOSTKEYS | sha256sum)" = "$HOSTKEY_SUM" ] || fail "the SSH host key changed on upgrade"
ok "upgraded to $NEXT_VERSION; edited conffile and host key unchanged"
start_server
netconf read tester pkgtest-secret || fail "store or users lost on upgrade"
stop_server
ok "store and users kept on upgrade"

# ---------------------------------------------------------------------------------------------
step "dpkg -r (remove: data and config kept)"
dpkg_wait -r ncstore > "$WORK/dpkg-r.log" 2>&1 || { cat "$WORK/dpkg-r.log"; fail "dpkg -r failed"; }
[ ! -e /usr/sbin/ncstored ] || fail "/usr/sbin/ncstored still there after dpkg -r"
[ -f /var/lib/ncstore/ncstore.db ] || fail "dpkg -r deleted the store"
[ -f /etc/ncstore/ncstored.conf ] || fail "dpkg -r deleted the config file"
if grep -q "not empty so not removed" "$WORK/dpkg-r.log"; then cat "$WORK/dpkg-r.log"; fail "dpkg -r warns about directories"; fi
ok "binary gone, /var/lib/ncstore/ncstore.db and /etc/ncstore/ncstored.conf kept"

step "dpkg -P (purge: data and config gone)"
dpkg_wait -P ncstore > "$WORK/dpkg-p.log" 2>&1 || { cat "$WORK/dpkg-p.log"; fail "dpkg -P failed"; }
[ ! -e /var/lib/ncstore ] || fail "/var/lib/ncstore still there after purge"
[ ! -e /etc/ncstore ] || fail "/etc/ncstore still there after purge"
if installed; then fail "ncstore still known to dpkg"; fi
[ ! -L "$WANTS" ] || fail "purge left $WANTS"
ok "purged: /var/lib/ncstore, /etc/ncstore and the enable link gone"

echo
echo "PASS: packaging"
