import AppConfigCore
import AppConfigSpec
import ArgumentParser

/// `render JOBFILE ...`: the job file's options first, the command line's after (they win).
/// The file is a JSON object keyed by long option names: strings and numbers are values, true
/// is a flag, arrays repeat an option, objects give NAME=VALUE pairs (`"map": {"serialNumber": "Asset Tag"}`).
/// Read by the values reader, so that every error has its line and column.
enum JobFile {
    /// Job files are a few lines; a bigger one is not a job file.
    static let maxBytes = 1 << 20

    static func expand(_ arguments: [String]) throws -> [String] {
        guard arguments.first == "render", arguments.count > 1, !arguments[1].hasPrefix("-") else { return arguments }
        let path = arguments[1]
        let document: RawValue
        do {
            document = try JSONReader.document(try readFileBytes(path, limit: maxBytes), file: path)
        } catch let error as FileReadError {
            throw ValidationError("job file: \(error)")
        } catch let problem as Problem {
            throw ValidationError("job file \(position(problem.location)): \(problem.message)")
        }
        guard case .dictionary(let members) = document.kind else {
            throw ValidationError("job file \(path): not a JSON object of options, but \(document.typeName)")
        }
        var tokens: [String] = []
        var seen = Set<String>()
        let known = knownOptions
        // `--dry-run` on the command line checks tonight's job without touching its outputs: the
        // job file's report folder (last night's account) is left alone unless the dry run, or
        // a `--report` on the command line, says otherwise.
        let commandLine = Array(arguments.dropFirst(2))
        let dryRunHere = commandLine.lastIndex(of: "--dry-run").map { i in commandLine.lastIndex(of: "--no-dry-run").map { $0 < i } ?? true } ?? false
        let jobDryRun = members.contains { if $0.key == "dry-run", case .boolean(true) = $0.value.kind { true } else { false } }
        for member in members {
            let option = "--" + member.key, at = position(member.keyLocation)
            guard known.contains(member.key) else {
                let hint = closestName(to: member.key, among: Array(known)).map { "; did you mean \"\($0)\"?" } ?? ""
                throw ValidationError("job file \(at): \"\(member.key)\" is not an option of render\(hint)")
            }
            guard seen.insert(member.key).inserted else { throw ValidationError("job file \(at): \"\(member.key)\" is given twice") }
            if member.key == "report" && dryRunHere && !jobDryRun {
                tokens += ["--job-file-report", try scalar(member.value, member.key)]
                continue
            }
            switch member.value.kind {
            case .boolean(let on): if on { tokens.append(option) }
            case .array(let items):
                for item in items { tokens += [option, try scalar(item, member.key)] }
            case .dictionary(let pairs):
                for pair in pairs { tokens += [option, "\(pair.key)=\(try scalar(pair.value, member.key))"] }
            default:
                tokens += [option, try scalar(member.value, member.key)]
            }
        }
        return ["render"] + tokens + arguments.dropFirst(2)
    }

    /// The long options `render` takes, read from its help (so the list cannot fall behind).
    static var knownOptions: Set<String> {
        let help = RenderCommand.helpMessage(includeHidden: true, columns: 10_000)
        var names = Set<String>()
        var rest = Substring(help)
        while let range = rest.range(of: "--") {
            let name = rest[range.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "-" }
            if !name.isEmpty { names.insert(String(name)) }
            rest = rest[range.upperBound...]
        }
        return names
    }

    private static func position(_ l: Location) -> String { "\(l.file):\(l.line):\(l.column)" }

    /// A string or a number, as the command line would spell it.
    private static func scalar(_ value: RawValue, _ key: String) throws -> String {
        switch value.kind {
        case .string(let s): return s
        case .integer(let i): return String(i)
        case .real(let d): return String(d)
        default: throw ValidationError("job file \(position(value.location)): \"\(key)\" takes strings and numbers, not \(value.typeName)")
        }
    }
}
