# ncstore-roadm-agent device profile (format: docs/roadm-device.md): what the hardware says
# about itself. node-id and the rest of the configuration are edited over NETCONF.
[info]
vendor = ncstore
model = NCS-ROADM-2D
serial-id = NCS0000001
softwareVersion = 2.2.1-ncstore
openroadm-version = 2.2
max-degrees = 2
max-srgs = 2
max-num-bin-15min-historical-pm = 96
max-num-bin-24hour-historical-pm = 7
macAddress = 02:00:5e:00:53:01

[equipment]
vendor = ncstore
hardware-version = 1.0

[degree]
max-wavelengths = 96

[srg]
max-add-drop-ports = 16
wavelength-duplication = one-per-srg
