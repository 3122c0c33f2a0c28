#!/usr/bin/env python3
"""Checks a delivery output against Apple's device-management schemas (../shared/corpus/ddm), with
PyYAML reading the schemas and plistlib the plists: an oracle nobody here wrote the parts of.

    ddm_validator.py SCHEMAS ddm OUTPUT PLAIN       # OUTPUT: a folder or a .tar; PLAIN: the --delivery plist folder
    ddm_validator.py SCHEMAS mdm-settings OUTPUT PLAIN BUNDLE_ID
    ddm_validator.py SCHEMAS mdm-install OUTPUT PLAIN BUNDLE_ID [APP_STORE_ID]

Every declaration: the envelope (declarationbase.yaml: Type, Identifier, ServerToken, Payload;
Identifier and ServerToken at most 64 octets), its payload against the schema of its Type (required
keys, types, rangelists, no unknown keys, https URLs). AppManaged's AppConfig key postdates the
pinned schemas: its shape is taken from Apple's page "Configuring managed apps and extensions"
(an object with DataAssetReference, Passwords, Identities, Certificates). References resolve:
DataAssetReference to a com.apple.asset.data, StandardConfigurations to configurations. Every asset:
Size and Hash-SHA-256 equal its bytes, DataURL ends in its SHA-256, and its bytes equal the plain
output of the same device. Every command: its RequestType and keys against the command's schema,
plistlib writes the same bytes, and its Configuration equals the plain output value for value.
Prints one summary line; exits 1 with the problems listed if any.
"""
import hashlib, io, json, os, plistlib, re, sys, tarfile

import yaml

TYPES = {"<string>": str, "<integer>": int, "<boolean>": bool, "<dictionary>": dict, "<array>": list,
         "<real>": float, "<data>": bytes}
UUID = re.compile(r"^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$")
problems = []


def problem(text):
    problems.append(text)


def check_value(value, spec, path):
    kind = spec.get("type")
    if kind == "<any>":
        return
    want = TYPES.get(kind)
    if want is None:
        problem(f"{path}: schema type {kind} not known to the validator")
        return
    if want is int and isinstance(value, bool) or not isinstance(value, want):
        problem(f"{path}: {type(value).__name__}, not {kind}")
        return
    if "rangelist" in spec and value not in spec["rangelist"]:
        problem(f"{path}: {value!r} is not one of {spec['rangelist']}")
    if kind == "<string>" and "https://" in str(spec.get("content", "")) and not value.startswith("https://"):
        problem(f"{path}: {value!r} does not start with https://")
    subkeys = spec.get("subkeys")
    if kind == "<dictionary>" and subkeys is not None:
        check_dict(value, subkeys, path)
    if kind == "<array>" and subkeys:
        for i, item in enumerate(value):
            check_value(item, pick_item_spec(item, subkeys), f"{path}[{i}]")


def pick_item_spec(item, subkeys):
    """An array's item spec: the only one, or (Settings) the dictionary whose Item names the item's."""
    if len(subkeys) == 1:
        return subkeys[0]
    for s in subkeys:
        for k in s.get("subkeys", []):
            if k["key"] == "Item" and isinstance(item, dict) and item.get("Item") in k.get("rangelist", []):
                return s
    return {"type": "<dictionary>", "subkeys": [{"key": "__no_matching_item__", "type": "<string>", "presence": "required"}]}


def check_dict(value, keys, path):
    if len(keys) == 1 and keys[0]["key"] == "ANY":
        return
    known = {k["key"]: k for k in keys}
    for k in keys:
        if k.get("presence") == "required" and k["key"] not in value:
            problem(f"{path}: required key {k['key']} is missing")
    for key, v in value.items():
        if key not in known:
            problem(f"{path}: unknown key {key}")
        else:
            check_value(v, known[key], f"{path}.{key}")


def load(path):
    with open(path) as f:
        return yaml.safe_load(f)


def declaration_schemas(root):
    base = load(os.path.join(root, "declarative/declarations/declarationbase.yaml"))
    schemas = {}
    for sub in ["activations", "assets", "configurations"]:
        folder = os.path.join(root, "declarative/declarations", sub)
        for name in sorted(os.listdir(folder)):
            if name.endswith(".yaml"):
                s = load(os.path.join(folder, name))
                schemas[s["payload"]["declarationtype"]] = s["payloadkeys"]
    # AppConfig (iOS 18.4), from Apple's "Configuring managed apps and extensions": not in the pinned commit.
    schemas["com.apple.configuration.app.managed"] = schemas["com.apple.configuration.app.managed"] + [
        {"key": "AppConfig", "type": "<dictionary>", "presence": "optional", "subkeys": [
            {"key": "DataAssetReference", "type": "<string>", "presence": "optional"},
            {"key": "Passwords", "type": "<array>", "presence": "optional"},
            {"key": "Identities", "type": "<array>", "presence": "optional"},
            {"key": "Certificates", "type": "<array>", "presence": "optional"}]}]
    return base["payloadkeys"], schemas


class Output:
    """A folder or a tar, read the same way."""

    def __init__(self, path):
        self.files = {}
        if os.path.isdir(path):
            for d, _, names in os.walk(path):
                for n in names:
                    full = os.path.join(d, n)
                    with open(full, "rb") as f:
                        self.files[os.path.relpath(full, path)] = f.read()
        else:
            with tarfile.open(path) as t:
                self.order = t.getnames()
                for m in t.getmembers():
                    self.files[m.name] = t.extractfile(m).read()


def check_ddm(schemas_root, out, plain):
    envelope, schemas = declaration_schemas(schemas_root)
    declarations = {}
    for name, data in out.files.items():
        if not name.startswith("declarations/"):
            continue
        d = json.loads(data)
        check_dict(d, envelope, name)
        ident, token = d.get("Identifier", ""), d.get("ServerToken", "")
        if len(ident.encode()) > 64 or len(token.encode()) > 64:
            problem(f"{name}: Identifier or ServerToken over 64 octets")
        if name != f"declarations/{ident}.json":
            problem(f"{name}: file name does not match Identifier {ident}")
        if d.get("Type") not in schemas:
            problem(f"{name}: no schema for Type {d.get('Type')}")
            continue
        check_dict(d.get("Payload", {}), schemas[d["Type"]], f"{name}:Payload")
        declarations[ident] = d
    assets = 0
    for ident, d in declarations.items():
        p = d["Payload"]
        if d["Type"] == "com.apple.asset.data":
            ref = p["Reference"]
            sha = ref["DataURL"].rsplit("/", 1)[-1]
            data = out.files.get(f"assets/{sha}.plist")
            if data is None:
                problem(f"{ident}: no asset file for {ref['DataURL']}")
                continue
            assets += 1
            if len(data) != ref.get("Size") or hashlib.sha256(data).hexdigest() != ref.get("Hash-SHA-256") or sha != ref.get("Hash-SHA-256"):
                problem(f"{ident}: Size, Hash-SHA-256 or DataURL do not match the asset's bytes")
            if ref.get("ContentType") != "application/x-plist":
                problem(f"{ident}: ContentType {ref.get('ContentType')}")
            plistlib.loads(data)
        elif d["Type"] == "com.apple.configuration.app.managed":
            ref = p.get("AppConfig", {}).get("DataAssetReference")
            if declarations.get(ref, {}).get("Type") != "com.apple.asset.data":
                problem(f"{ident}: DataAssetReference {ref} is not a com.apple.asset.data declaration")
            if sum(k in p for k in ["AppStoreID", "BundleID", "ManifestURL"]) != 1:
                problem(f"{ident}: not exactly one of AppStoreID, BundleID, ManifestURL")
        elif d["Type"] == "com.apple.activation.simple":
            for c in p["StandardConfigurations"]:
                if declarations.get(c, {}).get("Type") != "com.apple.configuration.app.managed":
                    problem(f"{ident}: StandardConfigurations names {c}, not an AppManaged configuration")
    # Each device's set file sits where its plain plist does, with .json for .plist.
    sets = {}
    for name, data in out.files.items():
        if name.endswith(".json") and not name.startswith("declarations/"):
            sets[json.loads(data)["device"]] = name
    devices = 0
    keys = []
    for line in out.files.get("index.jsonl", b"").decode().splitlines():
        entry = json.loads(line)
        devices += 1
        keys.append(entry["device"])
        ids = entry["declarations"]
        types = [declarations.get(i, {}).get("Type") for i in ids]
        if types != ["com.apple.activation.simple", "com.apple.configuration.app.managed", "com.apple.asset.data"]:
            problem(f"{entry['device']}: declaration set {ids} is not activation, configuration, asset")
            continue
        if declarations[ids[0]]["Payload"]["StandardConfigurations"] != [ids[1]] or \
                declarations[ids[1]]["Payload"]["AppConfig"]["DataAssetReference"] != ids[2]:
            problem(f"{entry['device']}: its activation, configuration and asset do not name each other")
        set_name = sets.get(entry["device"])
        set_entry = {k: entry[k] for k in ["device", "declarations", "asset"]}
        if set_name is None or json.loads(out.files[set_name]) != set_entry or entry.get("path") != set_name \
                or entry.get("sha256") != hashlib.sha256(out.files[set_name]).hexdigest():
            problem(f"{entry['device']}: its declaration-set file is not what its index line says")
            continue
        if out.files.get(f"assets/{entry['asset']}.plist") != plain.files.get(set_name[:-5] + ".plist"):
            problem(f"{entry['device']}: the asset is not the plain plist of the device")
    if keys != sorted(keys, key=lambda k: k.encode()):
        problem("index.jsonl is not in device-key order")
    plain_devices = sum(1 for n in plain.files if n.endswith(".plist"))
    if devices != plain_devices or len(sets) != devices:
        problem(f"index.jsonl has {devices} devices, {len(sets)} set files, the plain output {plain_devices} plists")
    return f"{len(declarations)} declarations, {assets} assets, {devices} devices"


# The closing files of every generation (the index, the manifest): not commands, not declarations.
CLOSING = {"index.jsonl", "manifest.tsv"}


def check_mdm(schemas_root, kind, out, plain, bundle, app_store_id):
    schema = load(os.path.join(schemas_root, "mdm/commands", "settings.yaml" if kind == "mdm-settings" else "application.install.yaml"))
    commands = 0
    for name, data in out.files.items():
        if name in CLOSING:
            continue
        cmd = plistlib.loads(data)
        commands += 1
        if plistlib.dumps(cmd) != data:
            problem(f"{name}: plistlib writes other bytes for the same command")
        if set(cmd) != {"Command", "CommandUUID"} or not UUID.match(cmd.get("CommandUUID", "")):
            problem(f"{name}: not {{Command, CommandUUID}} with an uppercase UUID")
        body = cmd.get("Command", {})
        if body.get("RequestType") != schema["payload"]["requesttype"]:
            problem(f"{name}: RequestType {body.get('RequestType')}")
        check_dict({k: v for k, v in body.items() if k != "RequestType"}, schema["payloadkeys"], f"{name}:Command")
        if kind == "mdm-settings":
            items = body.get("Settings", [])
            if len(items) != 1 or items[0].get("Item") != "ApplicationConfiguration" or items[0].get("Identifier") != bundle:
                problem(f"{name}: not one ApplicationConfiguration item for {bundle}")
                continue
            configuration = items[0].get("Configuration")
        else:
            want = {"iTunesStoreID": int(app_store_id)} if app_store_id else {"Identifier": bundle}
            if any(body.get(k) != v for k, v in want.items()) or ("Identifier" in body) == bool(app_store_id):
                problem(f"{name}: the app is not named by {want}")
            configuration = body.get("Configuration")
        if name not in plain.files or configuration != plistlib.loads(plain.files[name]):
            problem(f"{name}: Configuration differs from the plain plist of the device")
    plain_devices = sum(1 for n in plain.files if n.endswith(".plist"))
    if commands != plain_devices:
        problem(f"{commands} commands, {plain_devices} plain plists")
    return f"{commands} commands"


def main():
    schemas_root, kind, output, plain = sys.argv[1:5]
    out, plain_out = Output(output), Output(plain)
    if kind == "ddm":
        summary = check_ddm(schemas_root, out, plain_out)
    else:
        summary = check_mdm(schemas_root, kind, out, plain_out, sys.argv[5], sys.argv[6] if len(sys.argv) > 6 else None)
    for p in problems[:20]:
        print(p)
    print(f"ddm validator: {summary}, {len(problems)} problems")
    sys.exit(1 if problems else 0)


main()
