#!/usr/bin/env python3
"""Checks the Microsoft Graph bodies `appconfig export --to intune|intune-mam` writes against the
schema of those types (Tests/Oracles/graph/intune.schema.json, from Microsoft's v1.0 reference), with
the `jsonschema` package: an oracle nobody here wrote the parts of.

    graph_validator.py SCHEMA FILE...

Each file is checked as the type its name and @odata.type say: VARIANT.json a policy body
(iosMobileAppConfiguration or targetedManagedAppConfiguration), VARIANT.assign.json its assign
action's body, VARIANT.targetApps.json the targetApps action's body. An encodedSettingXml must decode
to a plist <dict>. Prints one summary line; exits 1 with the problems listed if any.
"""
import base64, json, plistlib, sys

import jsonschema


def main(argv):
    schema = json.load(open(argv[1]))
    problems, checked = [], 0
    for path in argv[2:]:
        body = json.load(open(path))
        kind = body.get("@odata.type", "") if isinstance(body, dict) else ""
        if path.endswith(".assign.json"):
            name = "targetedManagedAppConfigurationAssign" if "targetedManagedAppPolicyAssignment" in json.dumps(body) else "managedDeviceMobileAppConfigurationAssign"
        elif path.endswith(".targetApps.json"):
            name = "targetApps"
        else:
            name = kind.rsplit(".", 1)[-1]
        if name not in schema["$defs"]:
            problems.append(f"{path}: no type {name!r} in the schema")
            continue
        validator = jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": schema["$defs"]})
        for error in validator.iter_errors(body):
            problems.append(f"{path}: {'/'.join(map(str, error.absolute_path))}: {error.message}")
        if "encodedSettingXml" in body:
            xml = base64.b64decode(body["encodedSettingXml"], validate=True)
            try:
                value = plistlib.loads(b'<?xml version="1.0" encoding="UTF-8"?><plist version="1.0">' + xml + b"</plist>")
                if not isinstance(value, dict):
                    problems.append(f"{path}: encodedSettingXml is not a <dict>")
            except Exception as e:  # plistlib names what is wrong
                problems.append(f"{path}: encodedSettingXml is not a plist: {e}")
        checked += 1
    print(f"graph_validator: {checked} bodies checked, {len(problems)} problems")
    for p in problems:
        print("  " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
