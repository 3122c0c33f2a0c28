import AppConfigCore

/// `--html FILE`: one self-contained page (no external assets, no network): the counts, a chart of
/// states per assignment variant (stacked bars, CSS only), and a table of devices a search box
/// filters (a few lines of inline script). Devices not done come first; the table stops at
/// `rowLimit` rows (the page says how many it left out: `status.jsonl` has them all).
public enum StatusPage {
    static let colors: [DeviceState: String] = [
        .current: "#2e7d32", .acknowledged: "#2e7d32", .removed: "#9e9e9e", .pending: "#f9a825", .neverReported: "#bdbdbd",
        .stale: "#ef6c00", .invalidDeclaration: "#c62828", .assetFailed: "#ad1457", .appConfigRejected: "#6a1b9a",
        .appNotManaged: "#4527a0", .error: "#c62828", .notNow: "#0277bd", .unknownDevice: "#546e7a",
    ]

    public static func html(_ verdicts: [DeviceVerdict], summary: StatusSummary, rowLimit: Int = 20_000) -> [UInt8] {
        var h = ""
        h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>appconfig status</title>\n<style>\n"
        h += "body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;width:100%}"
        h += "td,th{border-bottom:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}"
        h += ".bar{display:flex;height:18px;width:480px;background:#eee}.bar span{display:block;height:100%}"
        h += ".row{display:flex;align-items:center;gap:8px;margin:2px 0}.label{width:260px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}"
        h += ".key span{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px}\n</style></head><body>\n"
        h += "<h1>appconfig status</h1>\n<p>" + escape(summary.generation) + " (" + escape(summary.delivery) + "): \(summary.devices) devices, "
        h += String(Int((summary.doneShare * 1000).rounded()) / 10) + "." + String(Int((summary.doneShare * 1000).rounded()) % 10) + "% done"
        h += summary.unknownDevices > 0 ? "; \(summary.unknownDevices) unknown enrollments" : ""
        h += "</p>\n<p class=\"key\">"
        for state in DeviceState.allCases where summary.states[state.rawValue] != nil {
            h += "<span style=\"background:\(colors[state]!)\"></span>" + state.rawValue + " \(summary.states[state.rawValue]!)"
        }
        h += "</p>\n<h2>States per assignment variant</h2>\n"
        for (variant, states) in (summary.rollups["assignment"] ?? [:]).sorted(by: { $0.key < $1.key }) {
            let total = max(states.values.reduce(0, +), 1)
            h += "<div class=\"row\"><div class=\"label\" title=\"" + escape(variant) + "\">" + escape(variant) + "</div><div class=\"bar\">"
            for state in DeviceState.allCases {
                guard let n = states[state.rawValue], n > 0 else { continue }
                let width = Double(n) * 100 / Double(total)
                h += "<span style=\"width:\(width)%;background:\(colors[state]!)\" title=\"\(state.rawValue) \(n)\"></span>"
            }
            h += "</div><div>\(total - StatusSummary.notDone(states)) of \(total) done</div></div>\n"
        }
        let ordered = verdicts.filter { !$0.state.isDone } + verdicts.filter { $0.state.isDone }
        h += "<h2>Devices</h2>\n<p><input id=\"q\" type=\"search\" placeholder=\"filter: device, state, variant, reason\" size=\"50\"> "
        h += ordered.count > rowLimit ? "the first \(rowLimit) of \(ordered.count) (not done first; status.jsonl lists every device)" : "\(ordered.count) devices"
        h += "</p>\n<table id=\"t\"><thead><tr><th>device</th><th>enrollment</th><th>state</th><th>detail</th><th>reasons</th><th>assignments</th><th>groups</th><th>reported</th></tr></thead><tbody>\n"
        for v in ordered.prefix(rowLimit) {
            let groups = v.groups.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            let cells = [v.device, v.enrollment, v.state.rawValue, v.detail ?? "", v.reasons.joined(separator: "; "), v.assignments.joined(separator: ", "), groups, v.reported ?? ""]
            h += "<tr>" + cells.map { "<td>" + escape($0) + "</td>" }.joined() + "</tr>\n"
        }
        h += "</tbody></table>\n<script>\n"
        h += "document.getElementById('q').addEventListener('input',function(){var q=this.value.toLowerCase();"
        h += "var rows=document.getElementById('t').tBodies[0].rows;for(var i=0;i<rows.length;i++){"
        h += "rows[i].style.display=rows[i].textContent.toLowerCase().indexOf(q)>=0?'':'none';}});\n</script>\n</body></html>\n"
        return Array(h.utf8)
    }

    /// Text for HTML: `&`, `<`, `>`, `"` and `'` escaped (device keys and reasons come from outside).
    static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for c in s.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }
}
