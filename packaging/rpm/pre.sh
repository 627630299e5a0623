# %pre of the ncstore rpm: the system user owning /var/lib/ncstore.
getent group ncstore >/dev/null || groupadd -r ncstore
getent passwd ncstore >/dev/null || \
    useradd -r -g ncstore -d /var/lib/ncstore -s /sbin/nologin -c "ncstore NETCONF server" ncstore
exit 0
