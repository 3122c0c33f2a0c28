import AppConfigCore
import AppConfigPattern
import AppConfigSpec

/// Compilation settings.
public struct CompileOptions: Sendable {
    /// Overrides every key's missing-value policy (nil: nullable keys omit, others fail).
    public var missingValuePolicy: MissingValuePolicy?
    /// Per-key overrides, by keyName; they win over the global one.
    public var keyPolicies: [String: MissingValuePolicy] = [:]

    public init(missingValuePolicy: MissingValuePolicy? = nil, keyPolicies: [String: MissingValuePolicy] = [:]) {
        self.missingValuePolicy = missingValuePolicy
        self.keyPolicies = keyPolicies
    }
}

/// Spec + admin values -> Program. Each key's value is the admin's if given, else the spec's
/// default; a key with neither is left out. Keys are laid out in code-point order of their names.
public enum Compiler {
    /// Throws every problem (errors and warnings) when any is an error.
    public static func compile(_ spec: Spec, values: AdminValues? = nil, options: CompileOptions = CompileOptions()) throws(ProblemList) -> Program {
        var builder = ProgramBuilder(spec: spec, options: options)
        builder.build(values: values)
        if builder.problems.contains(where: { $0.severity == .error }) {
            throw ProblemList(builder.problems)
        }
        return builder.finish()
    }

    /// Parses, checks and compiles a spec file and an optional values file: the front end's
    /// diagnostics (errors refuse compilation) and the compiler's. With assignments, the program is
    /// the one for devices that match none (`Configuration` compiles the others).
    public static func compile(specFile: String, valuesFile: String?, options: CompileOptions = CompileOptions(),
                               specOptions: SpecOptions = SpecOptions()) throws(ProblemList) -> (Program, [Problem]) {
        let configuration = try Configuration.load(specFile: specFile, valuesFile: valuesFile, options: options, specOptions: specOptions)
        return (configuration.base, configuration.warnings)
    }
}

/// A spec and its admin values, read and checked once, with the program of the devices that match
/// no assignment. The program of each set of assignments (a variant) is compiled from the same
/// spec and values on demand: the job asks for each set its devices match, once.
public struct Configuration: Sendable {
    public let spec: Spec
    public let values: AdminValues?
    public let options: CompileOptions
    public let base: Program
    /// The front end's and the compiler's warnings.
    public let warnings: [Problem]

    public var assignments: [Assignment] { values?.assignments ?? [] }
    /// The values file's `exclude`: devices any of these matches are left out of the run.
    public var exclusions: [Assignment] { values?.exclusions ?? [] }

    public static func load(specFile: String, valuesFile: String?, options: CompileOptions = CompileOptions(),
                            specOptions: SpecOptions = SpecOptions()) throws(ProblemList) -> Configuration {
        func read(_ path: String, limit: Int) throws(ProblemList) -> [UInt8] {
            do { return try readFileBytes(path, limit: limit) } catch { throw ProblemList([error.problem]) }
        }
        let parsed = SpecParser.parse(try read(specFile, limit: SpecParser.maxFileBytes), file: specFile, options: specOptions)
        var diagnostics = parsed.diagnostics
        guard let spec = parsed.spec, !parsed.hasErrors else { throw ProblemList(diagnostics) }
        var values: AdminValues?
        if let valuesFile {
            let read = AdminValuesReader.read(try read(valuesFile, limit: AdminValuesReader.maxFileBytes), file: valuesFile, spec: spec)
            diagnostics += read.diagnostics
            if read.hasErrors { throw ProblemList(diagnostics) }
            values = read.values
        }
        do {
            let base = try Compiler.compile(spec, values: values, options: options)
            return Configuration(spec: spec, values: values, options: options, base: base, warnings: diagnostics)
        } catch {
            throw ProblemList(diagnostics + error.problems)
        }
    }

    /// The program of devices that these assignments (indices, in file order) match.
    public func program(for assignments: [Int]) throws(ProblemList) -> Program {
        guard let values, !assignments.isEmpty else { return base }
        do {
            return try Compiler.compile(spec, values: values.applying(assignments), options: options)
        } catch {
            let names = assignments.map { "\"\(values.assignments[$0].name)\"" }.joined(separator: " + ")
            throw ProblemList(error.problems.map { p in
                var p = p
                p.message = "with assignments \(names): " + p.message
                return p
            })
        }
    }
}

struct ProgramBuilder {
    let spec: Spec
    let options: CompileOptions
    var problems: [Problem] = []

    var instructions: [Instruction] = []
    var constants: [Constant] = []
    var constantIndex: [DedupKey: Int] = [:]  // first constant of each class
    var texts: [[UInt8]] = []
    var slots: [Variable] = []
    var patterns: [Pattern] = []
    var patternIndex: [String: Int] = [:]
    var valueSets: [ValueSet] = []
    var keys: [KeyInfo] = []
    var arrays: [[Int]] = []
    var dynamicStrings = 0
    var provenChecks: [ProvenCheck] = []

    init(spec: Spec, options: CompileOptions) {
        self.spec = spec
        self.options = options
    }

    private mutating func problem(_ code: DiagnosticCode, at location: Location, _ message: String) {
        problems.append(Problem(code, at: location, message))
    }

    mutating func build(values: AdminValues?) {
        for name in options.keyPolicies.keys where spec.key(named: name) == nil {
            problem(.compileUnknownPolicyKey, at: Location(file: spec.file, line: 1, column: 1),
                    "a missing-value policy names key \"\(name)\", which the spec does not define")
        }
        // The version entry is a key like the others, in code-point order with them.
        var entries: [(name: String, key: Key?, value: AssignedValue)] = []
        let root = Location(file: spec.file, line: 1, column: 1)
        entries.append((SpecParser.versionKey, nil,
                        AssignedValue(items: [.init(.literal(.integer(Int64(spec.version))), at: root)], location: root)))
        for key in spec.keys {
            switch values?.entries[key.name] {
            case .omitted?: continue
            case .value(let v)?: entries.append((key.name, key, v))
            case nil:
                if let d = key.defaultValue { entries.append((key.name, key, d)) }
            }
        }
        entries.sort { Array($0.name.utf8).lexicographicallyPrecedes(Array($1.name.utf8)) }
        for entry in entries {
            emitKey(entry.name, key: entry.key, value: entry.value)
        }
        instructions.append(Instruction(.halt))
    }

    private mutating func emitKey(_ name: String, key: Key?, value: AssignedValue) {
        let type = key?.type ?? .integer
        let policy = options.keyPolicies[name] ?? options.missingValuePolicy ?? ((key?.isNullable ?? false) ? .omit : .fail)
        let keyIndex = keys.count
        let nameConstant = constant(.string(name))
        let escaped = PlistEncoding.xmlEscaped(Array(name.utf8)) ?? []
        keys.append(KeyInfo(name: name, type: type, xmlLine: Array("\t<key>".utf8) + escaped + Array("</key>\n".utf8),
                            nameConstant: nameConstant, policy: policy, startAddress: instructions.count, endAddress: 0))
        instructions.append(Instruction(.key, keyIndex))

        if let key { checkTypes(value, key: key) }
        if let key, let constraint = key.constraint, let literals = value.literals {
            for reason in constraint.violations(of: literals, keyType: key.type) {
                problem(.compileLiteralBreaksConstraint, at: value.location,
                        "\"\(name)\" would get a value that breaks its constraint: \(reason)")
            }
        } else if let key, let constraint = key.constraint, key.type.isArray, let reason = constraint.countViolation(value.items.count) {
            problem(.compileLiteralBreaksConstraint, at: value.location,
                    "\"\(name)\" would get a value that breaks its constraint: \(reason)")
        }

        if type.isArray {
            let arrayIndex = arrays.count
            arrays.append([])
            instructions.append(Instruction(.arrayBegin, value.items.count, arrayIndex))
            var items: [Int] = []
            for item in value.items {
                items.append(instructions.count)
                emitItem(item, key: key)
            }
            arrays[arrayIndex] = items
            instructions.append(Instruction(.arrayEnd))
        } else if let item = value.items.first {
            emitItem(item, key: key)
        }
        keys[keyIndex].endAddress = instructions.count
        instructions.append(Instruction(.endKey))
    }

    private mutating func checkTypes(_ value: AssignedValue, key: Key) {
        if !key.type.isArray && value.items.count != 1 {
            problem(.compileType, at: value.location, "\"\(key.name)\" is a \(key.type.rawValue) key and takes one value, not \(value.items.count)")
        }
        for item in value.items {
            switch item.content {
            case .literal(let v) where v.type != key.type.elementType:
                problem(.compileType, at: item.location, "\(v) is not of type \(key.type.elementType.rawValue), the type of \"\(key.name)\"")
            case .template where !key.type.acceptsVariables:
                problem(.compileVariableNotAllowed, at: item.location,
                        "\"\(key.name)\" is a \(key.type.rawValue) key; only string and stringArray keys can take variables")
            default:
                break
            }
        }
    }

    private mutating func emitItem(_ item: AssignedValue.Item, key: Key?) {
        switch item.content {
        case .literal(let v):
            instructions.append(Instruction(.constant, constant(v)))
        case .template(let template):
            instructions.append(Instruction(.stringBegin, dynamicStrings))
            dynamicStrings += 1
            for part in template.parts {
                switch part {
                case .literal(let s):
                    instructions.append(Instruction(.literal, texts.count))
                    texts.append(Array(s.utf8))
                case .variable(let v):
                    instructions.append(Instruction(.variable, slot(v)))
                case .filtered(let v, let filters):
                    emitFiltered(v, filters)
                }
            }
            instructions.append(Instruction(.stringEnd))
            if let key, let constraint = key.constraint { emitChecks(constraint, key: key, template: template) }
        }
    }

    /// A variable and its filters: `variableOr` when it has a default (which applies first, wherever
    /// it stands), then one instruction per filter in order.
    private mutating func emitFiltered(_ v: Variable, _ filters: [TemplateFilter]) {
        func text(_ s: String) -> Int {
            texts.append(Array(s.utf8))
            return texts.count - 1
        }
        let fallback = filters.lazy.compactMap { if case .defaultText(let t) = $0 { t } else { nil } }.first
        instructions.append(fallback.map { Instruction(.variableOr, slot(v), text($0)) } ?? Instruction(.variable, slot(v)))
        for filter in filters {
            switch filter {
            case .lower: instructions.append(Instruction(.lower))
            case .upper: instructions.append(Instruction(.upper))
            case .trim: instructions.append(Instruction(.trim))
            case .urlencode: instructions.append(Instruction(.urlencode))
            case .replace(let from, let to): instructions.append(Instruction(.replace, text(from), text(to)))
            case .substr(let start, let length):
                instructions.append(Instruction(.slice, Instruction.biased(start), length ?? Instruction.noBound))
            case .last(let n): instructions.append(Instruction(.slice, Instruction.biased(-n), Instruction.noBound))
            case .split(let separator, let index): instructions.append(Instruction(.split, text(separator), Instruction.biased(index)))
            case .defaultText: break
            }
        }
    }

    /// Checks on a dynamic string, with the reference's meaning: with a pattern, min/max are ignored;
    /// for a stringArray, min/max count elements (checked at compile time: the count is fixed).
    private mutating func emitChecks(_ constraint: Constraint, key: Key, template: StringTemplate) {
        if let source = constraint.pattern, let compiled = constraint.compiledPattern {
            let index = patternIndex[source] ?? {
                patterns.append(compiled)
                return patterns.count - 1
            }()
            patternIndex[source] = index
            if let text = Self.fixedText(of: template, matching: compiled) {
                provenChecks.append(ProvenCheck(address: instructions.count - 1, pattern: index, text: text))
            } else {
                instructions.append(Instruction(.checkPattern, index))
            }
        } else if key.type == .string, constraint.min != nil || constraint.max != nil {
            var lo = 0, hi = Instruction.noBound
            if case .count(let n)? = constraint.min { lo = min(n, Instruction.noBound - 1) }
            if case .count(let n)? = constraint.max { hi = min(n, Instruction.noBound - 1) }
            instructions.append(Instruction(.checkLength, lo, hi))
        }
        if let allowed = constraint.values {
            let strings = allowed.compactMap { if case .string(let s) = $0 { s } else { nil } }
            instructions.append(Instruction(.checkValues, valueSets.count))
            valueSets.append(ValueSet(values: strings.map { Array($0.utf8) }, display: strings))
        }
    }

    /// A run of the template's fixed text that matches the pattern wherever the variables put it
    /// (so every device passes the check: it is left out of the program), or nil. The pattern must
    /// be blind to text outside its match (`Pattern.Anchors`); with `^` the run must start the
    /// template, with `$` end it. Pattern checks were a large share of a device's instructions, and
    /// the reference's example proves two of its three.
    static func fixedText(of template: StringTemplate, matching pattern: Pattern) -> String? {
        guard let anchors = pattern.anchors else { return nil }
        var runs: [(text: String, first: Bool, last: Bool)] = []
        var run: String?
        var runStart = 0
        for (i, part) in template.parts.enumerated() {
            if case .literal(let s) = part {
                if run == nil { runStart = i }
                run = (run ?? "") + s
            } else if let text = run {
                runs.append((text, runStart == 0, false))
                run = nil
            }
        }
        if let text = run { runs.append((text, runStart == 0, true)) }
        return runs.first { run in
            (!anchors.start || run.first) && (!anchors.end || run.last) && pattern.search(run.text) == .match
        }?.text
    }

    private mutating func slot(_ v: Variable) -> Int {
        if let i = slots.firstIndex(of: v) { return i }
        slots.append(v)
        return slots.count - 1
    }

    /// Adds a constant; equal values (plistlib's notion: type and value, strings by code points)
    /// share a dedup class so that the binary writer stores them once.
    private mutating func constant(_ v: ScalarValue) -> Int {
        let key = DedupKey(v)
        let xml = PlistEncoding.xmlElement(v)
        let dedupClass: Int
        if let first = constantIndex[key] {
            // The same class; a second constant only where XML writes it differently (-0.0 after 0.0).
            if constants[first].xml == xml { return first }
            dedupClass = constants[first].dedupClass
        } else {
            dedupClass = constantIndex.count
            constantIndex[key] = constants.count
        }
        constants.append(Constant(value: v, xml: xml, binary: PlistEncoding.binaryObject(v), dedupClass: dedupClass))
        return constants.count - 1
    }

    func finish() -> Program {
        var program = Program(instructions: instructions, constants: constants, texts: texts, slots: slots,
                               patterns: patterns, valueSets: valueSets, keys: keys, arrays: arrays,
                               constantClassCount: constantIndex.count,
                               dynamicStringCount: dynamicStrings, provenChecks: provenChecks,
                               metadata: .init(bundleId: spec.bundleId, version: spec.version, hash: 0))
        program.metadata.hash = Self.fingerprint(program)
        return program
    }

    static func fingerprint(_ p: Program) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        // Each field ends with a separator byte, so that ["ab", "c"] and ["a", "bc"] differ.
        func mix(_ bytes: [UInt8]) { h = (bytes + [0xFF]).withView { fnv1a($0, seed: h) } }
        func mix(_ s: String) { mix(Array(s.utf8)) }
        for i in p.instructions { mix(PlistEncoding.bigEndian(i.rawValue, width: 8)) }
        for c in p.constants { mix(c.binary) }
        p.texts.forEach(mix)
        p.slots.forEach { mix($0.description) }
        p.patterns.forEach { mix($0.source) }
        p.valueSets.forEach { $0.values.forEach(mix) }
        p.keys.forEach { mix($0.name + "|" + $0.policy.rawValue) }
        mix(p.metadata.bundleId)
        return h
    }
}

/// plistlib's `(type(value), value)`: strings compare by code points (not Swift's canonical
/// equivalence), 0.0 equals -0.0, bool is not int.
struct DedupKey: Hashable {
    enum Kind: Hashable { case string([UInt8]), integer(Int64), float(Double), date(Double), boolean(Bool) }
    var kind: Kind

    init(_ v: ScalarValue) {
        switch v {
        case .string(let s): kind = .string(Array(s.utf8))
        case .integer(let i): kind = .integer(i)
        case .float(let d): kind = .float(d)
        case .date(let d): kind = .date(d.secondsSince2001)
        case .boolean(let b): kind = .boolean(b)
        }
    }
}
