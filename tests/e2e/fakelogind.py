#!/usr/bin/python3
# A stand-in for systemd-logind's D-Bus manager (and the one call of systemd's manager that reloads it), for the
# graceful node shutdown's tests on a machine without systemd, in the style of fakesystemd.py: it owns
# org.freedesktop.login1 and org.freedesktop.systemd1 on a private bus and answers what ckubelet asks:
#   - the property InhibitDelayMaxUSec (org.freedesktop.DBus.Properties.Get), initially --delay seconds;
#   - Inhibit(what, who, why, mode): a pipe's write end is handed out as the lock; its release (every copy closed)
#     is seen as the read end's hang-up and recorded as "InhibitReleased";
#   - systemd's KillUnit("systemd-logind.service", who, 1): a SIGHUP, i.e. a reload of logind.conf: the drop-in
#     CONF_DIR/99-kubelet.conf is read (InhibitDelayMaxSec=N) a little later, as logind does it asynchronously.
# The test fires the signal PrepareForShutdown(b) with the method org.ckubelet.FakeLogind.PrepareForShutdown(b).
# Every call and event is appended to a JSON-lines file with its time (time.time()).
#
#   fakelogind.py CALLS_FILE CONF_DIR [--delay SECONDS] [--no-reload]
# --no-reload: KillUnit is answered but the drop-in is not read (InhibitDelayMaxUSec stays short).
# with DBUS_SYSTEM_BUS_ADDRESS set to the bus. "ready" is printed on stdout once the names are owned.
import json
import os
import re
import sys
import time

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

LOGIND = "org.freedesktop.login1.Manager"
LOGIND_PATH = "/org/freedesktop/login1"
SYSTEMD = "org.freedesktop.systemd1.Manager"
SYSTEMD_PATH = "/org/freedesktop/systemd1"
TEST = "org.ckubelet.FakeLogind"


class Recorder:
    def __init__(self, calls_file):
        self.calls_file = calls_file

    def __call__(self, method, **kw):
        with open(self.calls_file, "a") as f:
            f.write(json.dumps(dict(method=method, time=time.time(), **kw)) + "\n")


class Logind(dbus.service.Object):
    def __init__(self, bus, record, conf_dir, delay_usec):
        super().__init__(bus, LOGIND_PATH)
        self.record = record
        self.conf_dir = conf_dir
        self.delay_usec = delay_usec
        self.next_lock = 1
        self.locks = {}

    def reload(self):
        path = os.path.join(self.conf_dir, "99-kubelet.conf")
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            text = ""
        m = re.search(r"^InhibitDelayMaxSec=(\d+)$", text, re.M)
        if m and "[Login]" in text:
            self.delay_usec = int(m.group(1)) * 1000000
        self.record("Reloaded", InhibitDelayMaxUSec=self.delay_usec, conf=text)
        return False

    @dbus.service.method("org.freedesktop.DBus.Properties", in_signature="ss", out_signature="v")
    def Get(self, interface, prop):
        self.record("Get", interface=str(interface), property=str(prop))
        if interface == LOGIND and prop == "InhibitDelayMaxUSec":
            return dbus.UInt64(self.delay_usec, variant_level=1)
        raise dbus.exceptions.DBusException(f"no property {prop}", name="org.freedesktop.DBus.Error.UnknownProperty")

    @dbus.service.method(LOGIND, in_signature="ssss", out_signature="h")
    def Inhibit(self, what, who, why, mode):
        lock = self.next_lock
        self.next_lock += 1
        self.record("Inhibit", what=str(what), who=str(who), why=str(why), mode=str(mode), lock=lock)
        r, w = os.pipe2(os.O_CLOEXEC)
        self.locks[lock] = r

        def released(fd, cond):
            self.record("InhibitReleased", lock=lock)
            os.close(fd)
            del self.locks[lock]
            return False
        GLib.io_add_watch(r, GLib.PRIORITY_DEFAULT, GLib.IO_HUP | GLib.IO_ERR, released)
        fd = dbus.types.UnixFd(w)  # a copy, closed with the object once sent
        os.close(w)
        return fd

    @dbus.service.signal(LOGIND, signature="b")
    def PrepareForShutdown(self, active):
        pass

    @dbus.service.method(TEST, in_signature="b", out_signature="")
    def Fire(self, active):
        self.record("PrepareForShutdown", active=bool(active))
        self.PrepareForShutdown(active)


class Systemd(dbus.service.Object):
    def __init__(self, bus, record, logind, reload):
        super().__init__(bus, SYSTEMD_PATH)
        self.record = record
        self.logind = logind
        self.do_reload = reload

    @dbus.service.method(SYSTEMD, in_signature="ssi", out_signature="")
    def KillUnit(self, unit, who, signal):
        self.record("KillUnit", name=str(unit), who=str(who), signal=int(signal))
        if unit == "systemd-logind.service" and signal == 1 and self.do_reload:
            GLib.timeout_add(150, self.logind.reload)  # logind reloads after the call returns


def main():
    calls_file, conf_dir = sys.argv[1], sys.argv[2]
    delay, reload = 5, True
    args = sys.argv[3:]
    while args:
        if args[0] == "--delay":
            delay = int(args[1])
            args = args[2:]
        elif args[0] == "--no-reload":
            reload = False
            args = args[1:]
        else:
            sys.exit(f"unknown argument {args[0]}")
    DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(os.environ["DBUS_SYSTEM_BUS_ADDRESS"])
    record = Recorder(calls_file)
    logind = Logind(bus, record, conf_dir, delay * 1000000)
    systemd = Systemd(bus, record, logind, reload)
    names = [dbus.service.BusName("org.freedesktop.login1", bus), dbus.service.BusName("org.freedesktop.systemd1", bus)]
    print("ready", flush=True)
    loop = GLib.MainLoop()
    bus.call_on_disconnection(lambda _: loop.quit())
    loop.run()
    del names, logind, systemd


if __name__ == "__main__":
    main()
