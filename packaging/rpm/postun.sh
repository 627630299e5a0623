# %postun of the ncstore rpm ($1 = 0: removal, 1: upgrade). rpm has no purge: the store in
# /var/lib/ncstore stays after `rpm -e` (rpm does not remove a directory that is not empty).
if [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null 2>&1 || true
    if [ "$1" -ge 1 ]; then
        systemctl try-restart ncstored.service >/dev/null 2>&1 || true
    fi
fi
exit 0
