# %post of the ncstore rpm ($1 = 1: install, 2: upgrade). Data in /var/lib/ncstore is never touched.
if [ ! -d /var/lib/ncstore ]; then
    install -d -m 0700 -o ncstore -g ncstore /var/lib/ncstore
fi
if [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null 2>&1 || true
    if [ "$1" -eq 1 ]; then
        # Fedora practice: the distribution's presets decide whether it is enabled.
        systemctl preset ncstored.service >/dev/null 2>&1 || true
    fi
fi
exit 0
