# %preun of the ncstore rpm ($1 = 0: removal, 1: upgrade).
if [ "$1" -eq 0 ] && [ -d /run/systemd/system ]; then
    systemctl --no-reload disable --now ncstored.service >/dev/null 2>&1 || true
fi
exit 0
