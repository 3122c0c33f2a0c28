#!/usr/bin/env python3
"""The pragmatic baseline: what an admin writes in an afternoon to render the demo app's managed
configuration for a fleet, for the harness to measure the engine against (tools/scale).

    Benchmarks/baseline/pragmatic.py INVENTORY.csv DIRECTORY.ldif OUT.tar

The demo spec's keys as a table (no spec is read, no constraint checked: that is the engine's
work this script leaves out), the CSV read with the csv module, the LDIF with a small reader
(folded lines and base64 values, as directory exports have them), users joined by mail, each
device's dictionary written with plistlib (binary) into a tar with tarfile. A device whose user
is missing is skipped and counted. One thread, as such scripts are.
"""
import base64, csv, datetime, io, plistlib, re, sys, tarfile

VARIABLE = re.compile(r"\$\((\w+)\)")

def read_ldif(path):
    """mail (lowercased) -> the user's attributes (first value of each), with dn."""
    users, entry, last = {}, {}, None
    def finish():
        if "mail" in entry:
            users[entry["mail"].lower()] = entry
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\r\n")
            if not line:
                finish()
                entry, last = {}, None
                continue
            if line.startswith(" ") and last:
                entry[last] += line[1:]
                continue
            if line.startswith("#") or ":" not in line:
                continue
            name, _, value = line.partition(":")
            name = name.lower()
            if value.startswith(":"):
                value = base64.b64decode(value[1:].strip()).decode("utf-8", "replace")
            else:
                value = value.strip()
            if name not in entry:
                entry[name] = value
            last = name
    finish()
    return users

def ou_of(dn):
    """The DN's OU nearest the domain."""
    units = [p.split("=", 1)[1] for p in dn.split(",") if p.strip().lower().startswith("ou=")]
    return units[-1] if units else ""

def main():
    inventory, directory, out = sys.argv[1:4]
    users = read_ldif(directory)
    skipped = rendered = 0
    expiry = datetime.datetime(2027, 12, 31, 23, 59, 59)
    with open(inventory, newline="", encoding="utf-8") as f, tarfile.open(out, "w") as tar:
        for row in csv.DictReader(f):
            user = users.get(row["Email Address"].lower())
            if user is None:
                skipped += 1
                continue
            mail = user.get("mail", "")
            values = {"ou": ou_of(user.get("dn", "")), "sAMAccountName": user.get("samaccountname", ""),
                      "emailAddressDomain": mail.rpartition("@")[2]}
            fill = lambda text: VARIABLE.sub(lambda m: values.get(m.group(1), ""), text)
            config = {
                "serverURL": fill("https://$(ou).fs.northwind.example/tenant/$(sAMAccountName)"),
                "userEmail": mail, "displayName": user.get("displayname", user.get("cn", "")), "region": values["ou"],
                "deviceSerial": row["Serial Number"], "deviceUDID": row["UDID"], "theme": "system",
                "allowedDomains": ["northwind.example", fill("$(emailAddressDomain)"), "partners.northwind.example"],
                "syncIntervalMinutes": 30, "retryBackoffSeconds": [1, 5, 30], "photoQuality": 0.8,
                "mapZoomLevels": [10.5, 14.0], "offlineMode": True, "licenseExpiry": expiry,
            }
            data = plistlib.dumps(config, fmt=plistlib.FMT_BINARY)
            info = tarfile.TarInfo(row["UDID"] + ".plist")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            rendered += 1
    print(f"rendered {rendered}, skipped {skipped}", file=sys.stderr)

if __name__ == "__main__":
    main()
