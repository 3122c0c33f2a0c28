import AppConfigCore
/// Checks spec files, and optionally an admin values file against the one spec, collecting every
/// diagnostic. Files that cannot be read are reported apart: they are I/O failures, not findings.
public struct Linter: Sendable {
    public var options: SpecOptions

    public init(options: SpecOptions = SpecOptions()) { self.options = options }

    public struct Outcome: Sendable {
        public var diagnostics: [Problem] = []
        public var ioFailures: [FileReadError] = []
        public var filesChecked = 0

        public var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }
    }

    public func lint(files: [String], valuesFile: String? = nil) -> Outcome {
        var outcome = Outcome()
        for file in files {
            let bytes: [UInt8]
            do {
                bytes = try readFileBytes(file, limit: SpecParser.maxFileBytes)
            } catch {
                if error.tooLarge { outcome.diagnostics.append(error.problem) } else { outcome.ioFailures.append(error) }
                continue
            }
            outcome.filesChecked += 1
            let result = SpecParser.parse(bytes, file: file, options: options)
            outcome.diagnostics += result.diagnostics
            guard let valuesFile, let spec = result.spec else { continue }
            do {
                let valueBytes = try readFileBytes(valuesFile, limit: AdminValuesReader.maxFileBytes)
                outcome.filesChecked += 1
                outcome.diagnostics += AdminValuesReader.read(valueBytes, file: valuesFile, spec: spec).diagnostics
            } catch {
                if error.tooLarge { outcome.diagnostics.append(error.problem) } else { outcome.ioFailures.append(error) }
            }
        }
        return outcome
    }
}
