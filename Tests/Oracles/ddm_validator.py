#!/usr/bin/env python3
"""Checks a delivery output against Apple's device-management schemas (../shared/corpus/ddm), with
PyYAML reading the schemas (vendored in Tests/Oracles/apple-device-management) and plistlib the
plists: an oracle nobody here wrote the parts of.

    ddm_validator.py SCHEMAS ddm OUTPUT PLAIN [KEY_MODE]   # OUTPUT: a folder or a .tar; PLAIN: the --delivery plist
                                                         # output; KEY_MODE legacy|managedapp|both (default both)
    ddm_validator.py SCHEMAS mdm-settings OUTPUT PLAIN BUNDLE_ID
    ddm_validator.py SCHEMAS mdm-install OUTPUT PLAIN BUNDLE_ID [APP_STORE_ID]

Every declaration (from declarations.jsonl, each Identifier once, or declarations/<Identifier>.json):
the envelope (declarationbase.yaml: Type, Identifier, ServerToken, Payload; Identifier and ServerToken
at most 64 octets), its payload against the schema of its Type as the schema gives it, with no case of
our own: required keys, types, rangelists, no unknown keys (ANY keys checked against their subkeys),
https URLs; every key with `assettypes` names a declaration of one of those types, and with
`asset-content-types` an asset of one of those ContentTypes; AppManaged has exactly one app source and,
for an App Store app, `InstallBehavior.License.Assignment`. Every asset: Size and Hash-SHA-256 equal its
bytes, DataURL ends in its SHA-256, and the app's asset equals the plain output of the same device.
Every set (index.jsonl): an activation naming the configuration naming exactly the set's assets, with
the keys KEY_MODE asks for; the manifest's path names those assets; assets.live lists them all.
Every command: its RequestType and keys against the command's schema, plistlib writes the same bytes,
and its Configuration equals the plain output value for value.
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


def check_value(value, spec, path, refs=None):
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
    if "assettypes" in spec and refs is not None:
        target = refs.get(value)
        if target is None or target.get("Type") not in spec["assettypes"]:
            problem(f"{path}: {value!r} is not a declaration of type {spec['assettypes']}")
        elif "asset-content-types" in spec:
            ctype = target.get("Payload", {}).get("Reference", {}).get("ContentType")
            if ctype not in spec["asset-content-types"]:
                problem(f"{path}: asset {value} has ContentType {ctype!r}, not one of {spec['asset-content-types']}")
    subkeys = spec.get("subkeys")
    if kind == "<dictionary>" and subkeys is not None:
        check_dict(value, subkeys, path, refs)
    if kind == "<array>" and subkeys:
        for i, item in enumerate(value):
            check_value(item, pick_item_spec(item, subkeys), f"{path}[{i}]", refs)


def pick_item_spec(item, subkeys):
    """An array's item spec: the only one, or (Settings) the dictionary whose Item names the item's."""
    if len(subkeys) == 1:
        return subkeys[0]
    for s in subkeys:
        for k in s.get("subkeys", []):
            if k["key"] == "Item" and isinstance(item, dict) and item.get("Item") in k.get("rangelist", []):
                return s
    return {"type": "<dictionary>", "subkeys": [{"key": "__no_matching_item__", "type": "<string>", "presence": "required"}]}


def check_dict(value, keys, path, refs=None):
    if len(keys) == 1 and keys[0]["key"] == "ANY":
        for key, v in value.items():
            check_value(v, keys[0], f"{path}.{key}", refs)
        return
    known = {k["key"]: k for k in keys}
    for k in keys:
        if k.get("presence") == "required" and k["key"] not in value:
            problem(f"{path}: required key {k['key']} is missing")
    for key, v in value.items():
        if key not in known:
            problem(f"{path}: unknown key {key}")
        else:
            check_value(v, known[key], f"{path}.{key}", refs)


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


def read_declarations(out):
    """Every declaration by Identifier: from declarations.jsonl (each once) or declarations/*.json."""
    declarations = {}
    if "declarations.jsonl" in out.files:
        for n, line in enumerate(out.files["declarations.jsonl"].decode().splitlines(), 1):
            d = json.loads(line)
            if d.get("Identifier") in declarations:
                problem(f"declarations.jsonl:{n}: {d.get('Identifier')} a second time")
            declarations[d.get("Identifier")] = (f"declarations.jsonl:{n}", d)
    for name, data in out.files.items():
        if name.startswith("declarations/"):
            d = json.loads(data)
            if name != f"declarations/{d.get('Identifier')}.json":
                problem(f"{name}: file name does not match Identifier {d.get('Identifier')}")
            declarations[d.get("Identifier")] = (name, d)
    return declarations


APP_SOURCES = ["AppStoreID", "BundleID", "ManifestURL", "AppComposedIdentifier"]


def check_ddm(schemas_root, out, plain, mode):
    envelope, schemas = declaration_schemas(schemas_root)
    found = read_declarations(out)
    declarations = {ident: d for ident, (_, d) in found.items()}
    for ident, (where, d) in found.items():
        check_dict(d, envelope, where)
        if len(str(ident).encode()) > 64 or len(d.get("ServerToken", "").encode()) > 64:
            problem(f"{where}: Identifier or ServerToken over 64 octets")
        if d.get("Type") not in schemas:
            problem(f"{where}: no schema for Type {d.get('Type')}")
            continue
        check_dict(d.get("Payload", {}), schemas[d["Type"]], f"{where}:Payload", declarations)
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
            plistlib.loads(data)
        elif d["Type"] == "com.apple.configuration.app.managed":
            if sum(k in p for k in APP_SOURCES) != 1:
                problem(f"{ident}: not exactly one of {APP_SOURCES}")
            # "This key needs to be present for App Store apps, when either AppStoreID or BundleID are present."
            if ("AppStoreID" in p or "BundleID" in p) and "Assignment" not in p.get("InstallBehavior", {}).get("License", {}):
                problem(f"{ident}: an App Store app without InstallBehavior.License.Assignment")
            keys = {"legacy": {"LegacyAppConfigAssetReference"}, "managedapp": {"AppConfig"}, "both": {"LegacyAppConfigAssetReference", "AppConfig"}}[mode]
            if {"LegacyAppConfigAssetReference", "AppConfig"} & set(p) != keys:
                problem(f"{ident}: app config keys {sorted({'LegacyAppConfigAssetReference', 'AppConfig'} & set(p))}, not {sorted(keys)} ({mode})")
            if "AppConfig" in p and "LegacyAppConfigAssetReference" in p and p["AppConfig"].get("DataAssetReference") != p["LegacyAppConfigAssetReference"]:
                problem(f"{ident}: AppConfig.DataAssetReference and LegacyAppConfigAssetReference name different assets")
        elif d["Type"] == "com.apple.activation.simple":
            for c in p["StandardConfigurations"]:
                if declarations.get(c, {}).get("Type") != "com.apple.configuration.app.managed":
                    problem(f"{ident}: StandardConfigurations names {c}, not an AppManaged configuration")
    files_layout = any(n.startswith("declarations/") for n in out.files)
    sets = {}
    if files_layout:
        for name, data in out.files.items():
            if name.endswith(".json") and not name.startswith("declarations/"):
                sets[json.loads(data)["device"]] = name
    manifest = {}
    for line in out.files.get("manifest.tsv", b"").decode().split("\n\n", 1)[-1].splitlines():
        digest, path, key = line.split("\t")
        manifest[key] = (digest, path)
    live = set(out.files.get("assets.live", b"").decode().splitlines())
    plain_by_key = {n.rsplit("/", 1)[-1][:-6]: n for n in plain.files if n.endswith(".plist")}
    devices, keys, named = 0, [], set()
    for line in out.files.get("index.jsonl", b"").decode().splitlines():
        entry = json.loads(line)
        devices += 1
        keys.append(entry["device"])
        ids = entry["declarations"]
        types = [declarations.get(i, {}).get("Type") for i in ids]
        if types[:2] != ["com.apple.activation.simple", "com.apple.configuration.app.managed"] or \
                any(t != "com.apple.asset.data" for t in types[2:]) or len(types) < 3:
            problem(f"{entry['device']}: declaration set {ids} is not activation, configuration, assets")
            continue
        config = declarations[ids[1]]["Payload"]
        referenced = {config.get("LegacyAppConfigAssetReference"), config.get("AppConfig", {}).get("DataAssetReference")} - {None}
        referenced |= {e.get("DataAssetReference") for e in config.get("ExtensionConfigs", {}).values()}
        if declarations[ids[0]]["Payload"]["StandardConfigurations"] != [ids[1]] or referenced != set(ids[2:]):
            problem(f"{entry['device']}: its activation, configuration and assets do not name each other")
        app_asset = config.get("LegacyAppConfigAssetReference") or config.get("AppConfig", {}).get("DataAssetReference")
        asset_names = [f"assets/{declarations[i]['Payload']['Reference']['Hash-SHA-256']}.plist" for i in ids[2:]]
        named |= set(asset_names)
        app_name = f"assets/{declarations[app_asset]['Payload']['Reference']['Hash-SHA-256']}.plist"
        if manifest.get(entry["device"]) != (entry["sha256"], " ".join(asset_names)):
            problem(f"{entry['device']}: its manifest line is not its digest and assets")
        if files_layout:
            set_name = sets.get(entry["device"])
            set_entry = {k: entry[k] for k in ["device", "declarations", "sha256"]}
            if set_name is None or json.loads(out.files[set_name]) != set_entry or entry.get("path") != set_name:
                problem(f"{entry['device']}: its declaration-set file is not what its index line says")
                continue
        plain_name = plain_by_key.get(entry["device"])
        if plain_name is None or out.files.get(app_name) != plain.files[plain_name]:
            problem(f"{entry['device']}: the asset is not the plain plist of the device")
    if keys != sorted(keys, key=lambda k: k.encode()):
        problem("index.jsonl is not in device-key order")
    if live != named:
        problem(f"assets.live lists {len(live)} assets, the sets name {len(named)}")
    plain_devices = sum(1 for n in plain.files if n.endswith(".plist"))
    if devices != plain_devices or (files_layout and len(sets) != devices):
        problem(f"index.jsonl has {devices} devices, {len(sets)} set files, the plain output {plain_devices} plists")
    return f"{len(declarations)} declarations, {assets} assets, {devices} devices"


# The closing files of every generation (the index, the manifest): not commands, not declarations.
CLOSING = {"index.jsonl", "manifest.tsv", "declarations.jsonl", "assets.live"}


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
        summary = check_ddm(schemas_root, out, plain_out, sys.argv[5] if len(sys.argv) > 5 else "both")
    else:
        summary = check_mdm(schemas_root, kind, out, plain_out, sys.argv[5], sys.argv[6] if len(sys.argv) > 6 else None)
    for p in problems[:20]:
        print(p)
    print(f"ddm validator: {summary}, {len(problems)} problems")
    sys.exit(1 if problems else 0)


main()
