#!/usr/bin/env python3
"""Checks a delivery output against Apple's device-management schemas (../shared/corpus/ddm), with
PyYAML reading the schemas (vendored in Tests/Oracles/apple-device-management) and plistlib the
plists: an oracle nobody here wrote the parts of.

    ddm_validator.py SCHEMAS ddm OUTPUT PLAIN [KEY_MODE [no-status-subscription]]
                                                         # OUTPUT: a folder or a .tar; PLAIN: the --delivery plist
                                                         # output; KEY_MODE legacy|managedapp|both (default both)
    ddm_validator.py SCHEMAS mdm-settings OUTPUT PLAIN BUNDLE_ID
    ddm_validator.py SCHEMAS mdm-install OUTPUT PLAIN BUNDLE_ID [APP_STORE_ID]
    ddm_validator.py SCHEMAS status-reports REPORT.json...  # status reports against the status items' schemas

Every declaration (from declarations.jsonl, each Identifier once, or declarations/<Identifier>.json):
the envelope (declarationbase.yaml: Type, Identifier, ServerToken, Payload; Identifier and ServerToken
at most 64 octets), its payload against the schema of its Type as the schema gives it, with no case of
our own: required keys, types, rangelists, no unknown keys (ANY keys checked against their subkeys),
https URLs; every key with `assettypes` names a declaration of one of those types, and with
`asset-content-types` an asset of one of those ContentTypes; AppManaged has exactly one app source and,
for an App Store app, `InstallBehavior.License.Assignment`. Every asset: Size and Hash-SHA-256 equal its
bytes, DataURL ends in its SHA-256, and the app's asset equals the plain output of the same device.
Every set (index.jsonl): an activation naming the configuration (and the status subscription to
app.managed.list, the set's third declaration, unless no-status-subscription) naming exactly the set's assets, with
the keys KEY_MODE asks for; the manifest's path names those assets; assets.live lists them all.
Every command: its RequestType and keys against the command's schema, plistlib writes the same bytes,
and its Configuration equals the plain output value for value.
Prints one summary line; exits 1 with the problems listed if any.
"""
import base64, functools, hashlib, io, json, os, plistlib, re, stat, sys, tarfile

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


@functools.lru_cache(maxsize=None)
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


# The credential asset types and the JSON documents behind them (assets/credentials/*.yaml).
CREDENTIAL_DOCUMENTS = {"com.apple.asset.credential.userpassword": "usernameandpassword.yaml",
                        "com.apple.asset.credential.identity": "identity.yaml",
                        "com.apple.asset.credential.scep": "scep.yaml",
                        "com.apple.asset.credential.acme": "acme.yaml"}


def asset_path(d):
    """The file an asset declaration's data is in: assets/<sha>.plist, or a credential document's
    assets/ (secret-assets/ when fetched with MDM authentication) <sha>.json|.pem|.der."""
    ref = d["Payload"]["Reference"]
    # The file is named as the DataURL ends: the SHA-256, or a secret document's keyed hash.
    sha = ref["DataURL"].rsplit("/", 1)[-1]
    if d["Type"] == "com.apple.asset.data":
        return f"assets/{sha}.plist"
    folder = "secret-assets" if d["Payload"].get("Authentication", {}).get("Type") == "MDM" else "assets"
    ending = {"application/json": ".json", "application/pem": ".pem", "application/pkcs1": ".der"}.get(ref.get("ContentType"), "")
    return f"{folder}/{sha}{ending}"


def check_document(schemas_root, d, data, where):
    """A credential document against its credential type's schema (data as base64 strings)."""
    if d["Type"] == "com.apple.asset.credential.certificate":
        if d["Payload"]["Reference"].get("ContentType") == "application/pem" and not data.startswith(b"-----BEGIN CERTIFICATE-----"):
            problem(f"{where}: a PEM certificate that does not start with its BEGIN line")
        return
    schema = load(os.path.join(schemas_root, "declarative/declarations/assets/credentials", CREDENTIAL_DOCUMENTS[d["Type"]]))
    document = json.loads(data)
    keys = [dict(k, type="<string>") if k.get("type") == "<data>" else k for k in schema["payloadkeys"]]
    check_dict(document, keys, where)
    for k in schema["payloadkeys"]:
        if k.get("type") == "<data>" and k["key"] in document:
            try:
                base64.b64decode(document[k["key"]], validate=True)
            except Exception:
                problem(f"{where}: {k['key']} is not base64 data")


class Output:
    """A folder or a tar, read the same way."""

    def __init__(self, path):
        self.files, self.modes = {}, {}
        if os.path.isdir(path):
            for d, _, names in os.walk(path):
                for n in names:
                    full = os.path.join(d, n)
                    with open(full, "rb") as f:
                        self.files[os.path.relpath(full, path)] = f.read()
                    self.modes[os.path.relpath(full, path)] = stat.S_IMODE(os.stat(full).st_mode)
        else:
            with tarfile.open(path) as t:
                self.order = t.getnames()
                for m in t.getmembers():
                    self.files[m.name] = t.extractfile(m).read()
                    self.modes[m.name] = m.mode


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


STATUS_SUBSCRIPTIONS = "com.apple.configuration.management.status-subscriptions"


def check_ddm(schemas_root, out, plain, mode, status_mode=True):
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
        if d["Type"].startswith("com.apple.asset."):
            ref = p["Reference"]
            sha = ref["DataURL"].rsplit("/", 1)[-1]
            data = out.files.get(asset_path(d))
            if data is None:
                problem(f"{ident}: no asset file for {ref['DataURL']}")
                continue
            assets += 1
            secret = p.get("Authentication", {}).get("Type") == "MDM"
            if secret and "Hash-SHA-256" not in ref:
                # A secret document: no hash beside the user name (an offline verifier of the
                # secret); its name is a keyed hash, which only the job's key checks.
                if len(data) != ref.get("Size") or hashlib.sha256(data).hexdigest() == sha:
                    problem(f"{ident}: Size does not match, or the secret document is named by its plain SHA-256")
            elif len(data) != ref.get("Size") or hashlib.sha256(data).hexdigest() != ref.get("Hash-SHA-256") or sha != ref.get("Hash-SHA-256"):
                problem(f"{ident}: Size, Hash-SHA-256 or DataURL do not match the asset's bytes")
            # The Reference's asset-content-types, where the asset type's schema lists them.
            allowed = next((k.get("asset-content-types") for k in schemas[d["Type"]] if k["key"] == "Reference"), None)
            if allowed and ref.get("ContentType") not in allowed:
                problem(f"{ident}: ContentType {ref.get('ContentType')!r} is not one of {allowed}")
            if d["Type"] == "com.apple.asset.data":
                plistlib.loads(data)
            else:
                check_document(schemas_root, d, data, asset_path(d))
                secret = asset_path(d).startswith("secret-assets/")
                if secret != (out.modes.get(asset_path(d), 0o600) & 0o077 == 0):
                    problem(f"{asset_path(d)}: mode {oct(out.modes.get(asset_path(d), 0))}, and it {'holds' if secret else 'holds no'} secret")
        elif d["Type"] == "com.apple.configuration.app.managed":
            if sum(k in p for k in APP_SOURCES) != 1:
                problem(f"{ident}: not exactly one of {APP_SOURCES}")
            # "This key needs to be present for App Store apps, when either AppStoreID or BundleID are present."
            if ("AppStoreID" in p or "BundleID" in p) and "Assignment" not in p.get("InstallBehavior", {}).get("License", {}):
                problem(f"{ident}: an App Store app without InstallBehavior.License.Assignment")
            keys = {"legacy": {"LegacyAppConfigAssetReference"}, "managedapp": {"DataAssetReference"}, "both": {"LegacyAppConfigAssetReference", "DataAssetReference"}}[mode]
            present = ({"LegacyAppConfigAssetReference"} & set(p)) | ({"DataAssetReference"} & set(p.get("AppConfig", {})))
            if present != keys:
                problem(f"{ident}: app config keys {sorted(present)}, not {sorted(keys)} ({mode})")
            if "AppConfig" in p and "LegacyAppConfigAssetReference" in p and p["AppConfig"].get("DataAssetReference") != p["LegacyAppConfigAssetReference"]:
                problem(f"{ident}: AppConfig.DataAssetReference and LegacyAppConfigAssetReference name different assets")
        elif d["Type"] == "com.apple.activation.simple":
            for c in p["StandardConfigurations"]:
                if declarations.get(c, {}).get("Type") not in ("com.apple.configuration.app.managed", STATUS_SUBSCRIPTIONS):
                    problem(f"{ident}: StandardConfigurations names {c}, not an AppManaged configuration or the status subscription")
        elif d["Type"] == STATUS_SUBSCRIPTIONS:
            if {"Name": "app.managed.list"} not in p.get("StatusItems", []):
                problem(f"{ident}: the status subscription does not subscribe to app.managed.list")
    files_layout = any(n.startswith("declarations/") for n in out.files)
    sets = {}
    if files_layout:
        for name, data in out.files.items():
            if name.endswith(".json") and not name.startswith(("declarations/", "assets/", "secret-assets/")):
                sets[json.loads(data)["device"]] = name
    manifest = {}
    for line in out.files.get("manifest.tsv", b"").decode().split("\n\n", 1)[-1].splitlines():
        # digest, path, key (version 3: and the input digest)
        digest, path, key = line.split("\t")[:3]
        manifest[key] = (digest, path)
    live = set(out.files.get("assets.live", b"").decode().splitlines())
    plain_by_key = {n.rsplit("/", 1)[-1][:-6]: n for n in plain.files if n.endswith(".plist")}
    devices, keys, named = 0, [], set()
    for line in out.files.get("index.jsonl", b"").decode().splitlines():
        entry = json.loads(line)
        devices += 1
        keys.append(entry["device"])
        ids = list(entry["declarations"])
        # The status subscription (unless --no-status-subscription): third, named by the activation.
        status = [ids.pop(2)] if len(ids) > 2 and declarations.get(ids[2], {}).get("Type") == STATUS_SUBSCRIPTIONS else []
        if status_mode != bool(status):
            problem(f"{entry['device']}: its set {'lacks' if status_mode else 'holds'} the status subscription")
        types = [declarations.get(i, {}).get("Type") for i in ids]
        if types[:2] != ["com.apple.activation.simple", "com.apple.configuration.app.managed"] or \
                any(not str(t).startswith("com.apple.asset.") for t in types[2:]) or len(types) < 3:
            problem(f"{entry['device']}: declaration set {ids} is not activation, configuration, assets")
            continue
        config = declarations[ids[1]]["Payload"]
        referenced = {config.get("LegacyAppConfigAssetReference"), config.get("AppConfig", {}).get("DataAssetReference")} - {None}
        dictionaries = [config.get("AppConfig", {})] + list(config.get("ExtensionConfigs", {}).values())
        referenced |= {e.get("DataAssetReference") for e in dictionaries[1:]}
        referenced |= {item["AssetReference"] for d in dictionaries for name in ["Passwords", "Identities", "Certificates"] for item in d.get(name, [])}
        if declarations[ids[0]]["Payload"]["StandardConfigurations"] != [ids[1]] + status or referenced != set(ids[2:]):
            problem(f"{entry['device']}: its activation, configuration and assets do not name each other")
        app_asset = config.get("LegacyAppConfigAssetReference") or config.get("AppConfig", {}).get("DataAssetReference")
        asset_names = [asset_path(declarations[i]) for i in ids[2:]]
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


# app.managed.list's config-state, as Apple's commit 0a4527c5 of apple/device-management gives it
# (declarative/status/app.managed.list.yaml there; the copy vendored here is the older b6202ca2,
# without it): the keys and ranges only, transcribed.
CONFIG_STATE = {"key": "config-state", "type": "<dictionary>", "subkeys": [
    {"key": "app-config-state", "type": "<dictionary>", "subkeys": [
        {"key": "state", "type": "<string>", "presence": "required", "rangelist": ["unknown", "invalid", "valid"]}]},
    {"key": "extension-config-state", "type": "<dictionary>", "subkeys": [
        {"key": "ANY", "type": "<dictionary>", "subkeys": [
            {"key": "state", "type": "<string>", "presence": "required", "rangelist": ["unknown", "invalid", "valid"]}]}]}]}


def check_status_reports(schemas_root, paths):
    """Status reports (StatusItems, Errors, FullReport) against the status items' schemas:
    management.declarations and app.managed.list (with 0a4527c5's config-state)."""
    declarations = load(os.path.join(schemas_root, "declarative/status/management.declarations.yaml"))["payloadkeys"][0]
    apps = load(os.path.join(schemas_root, "declarative/status/app.managed.list.yaml"))["payloadkeys"][0]
    app_item = dict(apps["subkeys"][0])
    app_item["subkeys"] = list(app_item["subkeys"]) + [CONFIG_STATE]
    for path in paths:
        with open(path) as f:
            report = json.load(f)
        where = os.path.basename(path)
        check_dict(report, [{"key": "StatusItems", "type": "<dictionary>", "presence": "required"},
                            {"key": "Errors", "type": "<array>"}, {"key": "FullReport", "type": "<boolean>"}], where)
        items = report.get("StatusItems", {})
        for key in items:
            if key not in ("management", "app"):
                problem(f"{where}: status item {key} is not one this tool subscribes to")
        if "declarations" in items.get("management", {}):
            check_value(items["management"]["declarations"], declarations, f"{where}:management.declarations")
        for i, item in enumerate(items.get("app", {}).get("managed", {}).get("list", [])):
            if item.get("_removed"):
                if set(item) != {"identifier", "_removed"}:
                    problem(f"{where}: a removed app carries more than identifier and _removed")
                continue
            check_value(item, app_item, f"{where}:app.managed.list[{i}]")
    return f"{len(paths)} status reports"


def main():
    if sys.argv[2] == "status-reports":
        summary = check_status_reports(sys.argv[1], sys.argv[3:])
        for p in problems[:20]:
            print(p)
        print(f"ddm validator: {summary}, {len(problems)} problems")
        sys.exit(1 if problems else 0)
    schemas_root, kind, output, plain = sys.argv[1:5]
    out, plain_out = Output(output), Output(plain)
    if kind == "ddm":
        summary = check_ddm(schemas_root, out, plain_out, sys.argv[5] if len(sys.argv) > 5 else "both",
                            status_mode=sys.argv[6:7] != ["no-status-subscription"])
    else:
        summary = check_mdm(schemas_root, kind, out, plain_out, sys.argv[5], sys.argv[6] if len(sys.argv) > 6 else None)
    for p in problems[:20]:
        print(p)
    print(f"ddm validator: {summary}, {len(problems)} problems")
    sys.exit(1 if problems else 0)


main()
