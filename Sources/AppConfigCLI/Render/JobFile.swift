import AppConfigBytes
import ArgumentParser
import Foundation

/// `render JOBFILE ...`: the job file's options first, the command line's after (they win).
/// The file is a JSON object keyed by long option names: strings and numbers are values, true
/// is a flag, arrays repeat an option, objects give NAME=VALUE pairs (`"map": {"serialNumber": "Asset Tag"}`).
enum JobFile {
    static func expand(_ arguments: [String]) throws -> [String] {
        guard arguments.first == "render", arguments.count > 1, !arguments[1].hasPrefix("-") else { return arguments }
        let path = arguments[1]
        let data: [UInt8]
        do { data = try readFileBytes(path) } catch { throw ValidationError("job file: \(error)") }
        guard let object = try? JSONSerialization.jsonObject(with: Data(data)) as? [String: Any] else {
            throw ValidationError("job file \(path): not a JSON object of options")
        }
        var tokens: [String] = []
        for (key, value) in object.sorted(by: { $0.key < $1.key }) {
            let option = "--" + key
            // JSON true/false arrive as Bool, or as __NSCFBoolean from corelibs Foundation on Linux.
            if type(of: value) == Bool.self || String(describing: type(of: value)).hasSuffix("Boolean") {
                if value as! Bool { tokens.append(option) }
                continue
            }
            switch value {
            case let s as String: tokens += [option, s]
            case let i as Int: tokens += [option, String(i)]
            case let n as NSNumber: tokens += [option, n.stringValue]
            case let list as [Any]: for item in list { tokens += [option, "\(item)"] }
            case let pairs as [String: Any]: for (k, v) in pairs.sorted(by: { $0.key < $1.key }) { tokens += [option, "\(k)=\(v)"] }
            default: throw ValidationError("job file \(path): \"\(key)\" has a value of an unsupported kind")
            }
        }
        return ["render"] + tokens + arguments.dropFirst(2)
    }
}
