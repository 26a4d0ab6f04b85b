#!/usr/bin/python3
# A stand-in for systemd's D-Bus manager, for the systemd cgroup driver's tests on a machine without systemd: it
# owns org.freedesktop.systemd1 on a private bus and answers the calls ckubelet makes (StartTransientUnit,
# SetUnitProperties, StopUnit, GetUnit, ResetFailedUnit, the Version property). As systemd does for a slice, it makes the slice's
# directory in every cgroup hierarchy on start and removes it on stop, and announces each job's end with
# JobRemoved. Every call is appended to a JSON-lines file for the test to read.
#
#   fakesystemd.py CALLS_FILE [--fail-prefix PREFIX] [--no-job-signal]
# --fail-prefix: the jobs of units named PREFIX... end "failed"; --no-job-signal: no JobRemoved is sent.
# with DBUS_SYSTEM_BUS_ADDRESS set to the bus. "ready" is printed on stdout once the name is owned.
import json
import os
import sys

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

from conftest import cgroup_hierarchies

MANAGER = "org.freedesktop.systemd1.Manager"
PATH = "/org/freedesktop/systemd1"


def expand_slice(unit):
    """runc's ExpandSlice: "a-b-c.slice" → "a.slice/a-b.slice/a-b-c.slice"."""
    assert unit.endswith(".slice") and "/" not in unit, unit
    name = unit[:-len(".slice")]
    if name == "-":
        return ""
    parts, prefix = [], ""
    for comp in name.split("-"):
        assert comp, unit
        parts.append(prefix + comp + ".slice")
        prefix += comp + "-"
    return "/".join(parts)


def plain(v):
    """dbus types → JSON"""
    if isinstance(v, dbus.Boolean):
        return bool(v)
    if isinstance(v, (dbus.String, dbus.ObjectPath)):
        return str(v)
    if isinstance(v, (dbus.Array, list)):
        return [plain(x) for x in v]
    if isinstance(v, (dbus.Struct, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, (dbus.UInt64, dbus.Int64, dbus.UInt32, dbus.Int32, dbus.UInt16, dbus.Int16, dbus.Byte)):
        return int(v)
    return v


class Manager(dbus.service.Object):
    def __init__(self, bus, calls_file, fail_units, job_signal):
        super().__init__(bus, PATH)
        self.job_signal = job_signal
        self.calls_file = calls_file
        self.fail_units = fail_units
        self.units = set()
        self.next_job = 1

    def record(self, method, **kw):
        with open(self.calls_file, "a") as f:
            f.write(json.dumps(dict(method=method, **kw)) + "\n")

    def new_job(self, unit, result):
        job = self.next_job
        self.next_job += 1
        path = dbus.ObjectPath(f"{PATH}/job/{job}")
        # after the reply, as systemd runs the job later in its loop
        if self.job_signal:
            GLib.idle_add(lambda: self.JobRemoved(dbus.UInt32(job), path, unit, result) and False)
        return path

    def make_dirs(self, rel):
        for h in cgroup_hierarchies():
            parent = h
            for comp in rel.split("/"):
                d = os.path.join(parent, comp)
                if not os.path.isdir(d):
                    os.mkdir(d)
                    for f in ("cpuset.cpus", "cpuset.mems"):
                        src = os.path.join(parent, f)
                        if os.path.exists(src):
                            with open(src) as s, open(os.path.join(d, f), "w") as t:
                                t.write(s.read().strip())
                parent = d

    def remove_dirs(self, rel):
        for h in cgroup_hierarchies():
            top = os.path.join(h, rel)
            if not os.path.isdir(top):
                continue
            for d, _, _ in sorted(os.walk(top), key=lambda t: -t[0].count("/")):
                try:
                    os.rmdir(d)
                except OSError:
                    pass  # busy: systemd would kill what is left; the test sees it

    @dbus.service.method(MANAGER, in_signature="ssa(sv)a(sa(sv))", out_signature="o")
    def StartTransientUnit(self, name, mode, properties, aux):
        props = [[str(k), plain(v)] for k, v in properties]
        self.record("StartTransientUnit", name=str(name), mode=str(mode), properties=props, aux=plain(aux))
        if name in self.units:
            raise dbus.exceptions.DBusException(f"Unit {name} already exists.",
                                                name="org.freedesktop.systemd1.UnitExists")
        if any(name.startswith(p) for p in self.fail_units):
            return self.new_job(name, "failed")
        self.make_dirs(expand_slice(str(name)))
        self.units.add(str(name))
        return self.new_job(name, "done")

    @dbus.service.method(MANAGER, in_signature="sba(sv)", out_signature="")
    def SetUnitProperties(self, name, runtime, properties):
        props = [[str(k), plain(v)] for k, v in properties]
        self.record("SetUnitProperties", name=str(name), runtime=bool(runtime), properties=props)
        if name not in self.units:
            raise dbus.exceptions.DBusException(f"Unit {name} not loaded.",
                                                name="org.freedesktop.systemd1.NoSuchUnit")

    @dbus.service.method(MANAGER, in_signature="ss", out_signature="o")
    def StopUnit(self, name, mode):
        self.record("StopUnit", name=str(name), mode=str(mode))
        if name not in self.units:
            raise dbus.exceptions.DBusException(f"Unit {name} not loaded.",
                                                name="org.freedesktop.systemd1.NoSuchUnit")
        self.units.discard(str(name))
        self.remove_dirs(expand_slice(str(name)))
        return self.new_job(name, "done")

    @dbus.service.method(MANAGER, in_signature="s", out_signature="o")
    def GetUnit(self, name):
        self.record("GetUnit", name=str(name))
        if name not in self.units:
            raise dbus.exceptions.DBusException(f"Unit {name} not loaded.",
                                                name="org.freedesktop.systemd1.NoSuchUnit")
        return dbus.ObjectPath(f"{PATH}/unit/" + "".join(c if c.isalnum() else "_%02x" % ord(c) for c in name))

    @dbus.service.method(MANAGER, in_signature="s", out_signature="")
    def ResetFailedUnit(self, name):
        self.record("ResetFailedUnit", name=str(name))

    @dbus.service.signal(MANAGER, signature="uoss")
    def JobRemoved(self, id_, job, unit, result):
        pass

    @dbus.service.method("org.freedesktop.DBus.Properties", in_signature="ss", out_signature="v")
    def Get(self, interface, prop):
        self.record("Get", interface=str(interface), property=str(prop))
        if interface == MANAGER and prop == "Version":
            return dbus.String("247.3-7+fake", variant_level=1)
        raise dbus.exceptions.DBusException(f"no property {prop}",
                                            name="org.freedesktop.DBus.Error.UnknownProperty")


def main():
    calls_file = sys.argv[1]
    fail_units = set()
    job_signal = True
    args = sys.argv[2:]
    while args:
        if args[0] == "--fail-prefix":
            fail_units.add(args[1])
            args = args[2:]
        elif args[0] == "--no-job-signal":
            job_signal = False
            args = args[1:]
        else:
            sys.exit(f"unknown argument {args[0]}")
    DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(os.environ["DBUS_SYSTEM_BUS_ADDRESS"])
    name = dbus.service.BusName("org.freedesktop.systemd1", bus)
    manager = Manager(bus, calls_file, fail_units, job_signal)
    print("ready", flush=True)
    loop = GLib.MainLoop()
    bus.call_on_disconnection(lambda _: loop.quit())
    loop.run()
    del name, manager


if __name__ == "__main__":
    main()
