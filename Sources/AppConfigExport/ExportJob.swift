import AppConfigCore
import AppConfigOutput
import AppConfigSpec
import Foundation

/// What `appconfig export` is asked.
public struct ExportOptions: Sendable {
    public var target: ExportTarget
    public var spec: String
    public var values: String
    /// Where the files go (`DIR/<target>/<variant>...`, `DIR/plan.md`); nil with `dryRun`.
    public var out: String?
    /// Only the plan: nothing written.
    public var dryRun = false
    /// What does not translate is an error, not a warning.
    public var strict = false
    /// Intune: the whole plist in `encodedSettingXml` instead of `settings[]`.
    public var intuneXML = false
    /// Intune: the app's ID for `targetedMobileApps`.
    public var intuneAppID: String?

    public init(target: ExportTarget, spec: String, values: String) {
        self.target = target
        self.spec = spec
        self.values = values
    }
}

/// What an export made.
public struct ExportResult: Sendable {
    public var variants: [ExportVariant]
    /// The plan (`plan.md`): per variant its object, group, keys and what did not translate.
    public var plan: String
    /// Files written, relative to `out` (none for a dry run).
    public var files: [String]
    /// Every note of every variant (untranslatable, converted) and the values file's warnings.
    public var notes: [Problem]

    /// Some value did not translate (exit 3, or an error with `--strict`).
    public var hasUntranslatable: Bool { notes.contains { $0.code == ExportCode.untranslatable } }
}

/// `appconfig export`, for an embedder: read the spec and the values file, refuse secrets, make one
/// object per variant in the console's form, write them and the plan.
public struct ExportJob: Sendable {
    public let options: ExportOptions

    public init(_ options: ExportOptions) { self.options = options }

    public func run() throws(Problem) -> ExportResult {
        let spec = try readSpec()
        let values = try readValues(spec)
        try refuseSecrets(values.values)
        let translator = ExportTranslator(target: options.target, spec: spec, intuneXML: options.intuneXML)
        let variants = translator.variants(values.values)
        var notes = values.diagnostics.filter { $0.severity != .error }
        for v in variants { notes += v.notes }
        if options.strict {
            notes = notes.map { n in
                guard n.code == ExportCode.untranslatable else { return n }
                var strict = n
                strict.severity = .error
                return strict
            }
        }
        let writers = ExportWriters(target: options.target, spec: spec, intuneXML: options.intuneXML, intuneAppID: options.intuneAppID)
        var stems: [String: Int] = [:]
        var planned: [(ExportVariant, [(name: String, bytes: [UInt8])])] = []
        for v in variants {
            var stem = Self.fileStem(v.name)
            stems[stem, default: 0] += 1
            if stems[stem]! > 1 { stem += "-\(stems[stem]!)" }
            do { planned.append((v, try writers.files(v, stem: options.target.rawValue + "/" + stem))) } catch {
                throw Problem(ExportCode.usage, at: Location(file: options.values), "cannot write the \(v.name) object: \(error)")
            }
        }
        let plan = Self.plan(options, spec: spec, planned: planned)
        var files: [String] = []
        if !options.dryRun, !(options.strict && notes.contains { $0.severity == .error }) {
            guard let out = options.out else { throw Problem(ExportCode.usage, at: Location(), "--out DIR is needed unless --dry-run") }
            try Self.write(planned.flatMap(\.1) + [("plan.md", Array(plan.utf8))], into: out)
            files = planned.flatMap { $0.1.map(\.name) } + ["plan.md"]
        }
        return ExportResult(variants: variants, plan: plan, files: files, notes: notes)
    }

    private func readSpec() throws(Problem) -> Spec {
        let bytes: [UInt8]
        do { bytes = try readFileBytes(options.spec, limit: SpecParser.maxFileBytes) } catch { throw error.problem }
        let parsed = SpecParser.parse(bytes, file: options.spec)
        guard let spec = parsed.spec, !parsed.hasErrors else {
            throw parsed.diagnostics.first { $0.severity == .error } ?? Problem(ExportCode.usage, at: Location(file: options.spec), "\(options.spec) is not a spec")
        }
        return spec
    }

    private func readValues(_ spec: Spec) throws(Problem) -> AdminValuesResult {
        let bytes: [UInt8]
        do { bytes = try readFileBytes(options.values, limit: AdminValuesReader.maxFileBytes) } catch { throw error.problem }
        let result = AdminValuesReader.read(bytes, file: options.values, spec: spec)
        if let first = result.diagnostics.first(where: { $0.severity == .error }) { throw first }
        return result
    }

    /// None of these consoles takes a ManagedApp credential or a secret: refused whole, nothing written.
    private func refuseSecrets(_ values: AdminValues) throws(Problem) {
        let credentials = values.credentials + values.assignments.flatMap(\.credentials)
        if let c = credentials.first {
            throw Problem(ExportCode.secret, at: c.location,
                          "the values file gives credentials (\(credentials.count)): \(options.target.title) takes no ManagedApp credential or secret; export the values without them and deliver credentials with render --delivery ddm")
        }
    }

    /// A variant's name as a file name: ASCII letters, digits, `_` and `-`; anything else `-`.
    static func fileStem(_ name: String) -> String {
        let kept = name.unicodeScalars.map { c -> String in
            ("0"..."9").contains(c) || ("a"..."z").contains(c) || ("A"..."Z").contains(c) || c == "_" || c == "-" ? String(c) : "-"
        }.joined()
        let stem = kept.drop { $0 == "-" }
        return stem.isEmpty ? "variant" : String(stem)
    }

    static func plan(_ options: ExportOptions, spec: Spec, planned: [(ExportVariant, [(name: String, bytes: [UInt8])])]) -> String {
        var out = "# Export of \(spec.bundleId) to \(options.target.title)\n\n"
        out += "From `\(options.values)` against `\(options.spec)`: one object per variant, each assigned to a group.\n"
        for (v, files) in planned {
            out += "\n## \(v.name)\n\n"
            out += "- group: \(v.name == "all" ? "every device" : v.group)" + (v.match.isEmpty ? "" : " (devices where \(v.match))") + "\n"
            out += "- files: " + files.map { "`\($0.name)`" }.joined(separator: ", ") + "\n"
            out += "- keys: " + (v.keys.isEmpty ? "none" : v.keys.map { "`\($0.key)`" }.joined(separator: ", ")) + "\n"
            if !v.notes.isEmpty {
                out += "- not as given:\n"
                for n in v.notes { out += "  - \(n.code.rawValue): \(n.message)\n" }
            }
        }
        return out
    }

    /// Each file written whole under a temporary name, then renamed: none is ever partial.
    static func write(_ files: [(name: String, bytes: [UInt8])], into folder: String) throws(Problem) {
        for (name, bytes) in files {
            let path = folder + "/" + name
            let parent = (path as NSString).deletingLastPathComponent
            do { try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true) } catch {
                throw Problem(ExportCode.usage, at: Location(file: parent), "cannot make \(parent): \(error.localizedDescription)")
            }
            try writeFileAtomically(bytes, to: path)
        }
    }
}
