import AppConfigCore
import AppConfigCompiler
import AppConfigPattern

/// Renders one device at a time: the VM resolves the device's dynamic strings and runs the checks,
/// then the emitter of the output format writes the plist. Every buffer is owned here and reused,
/// so that the per-device path allocates nothing once warm. One per thread; the `ProgramImage` is
/// shared.
public final class Renderer {
    public let image: ProgramImage
    public let format: OutputFormat
    let program: Program

    /// The mutable part of a render, moved into a local for the duration of one device and passed
    /// `inout`: class properties would cost a dynamic exclusivity check on every access.
    struct State {
        /// The rendered plist; valid until the next render.
        var output: GrowingStorage<UInt8>
        /// Bytes of the dynamic strings of the current device.
        var text: GrowingStorage<UInt8>
        var presentCount = 0
    }

    /// The per-device buffers, the renderer's own or shared with the other renderers of its thread.
    private let scratch: RenderScratch
    /// A renderer is one worker's: the properties used per device are not checked for exclusive
    /// access at run time (`@exclusivity(unchecked)`: the checks were two runtime calls per device).
    /// Every problem of the last device rendered, in key order (empty when it rendered): a device
    /// is checked whole, so that one run names all that is wrong with it. `render` throws the first.
    @exclusivity(unchecked) public private(set) var deviceProblems: [Problem] = []
    /// Per dynamic string of the current device: where its bytes are and what the scan found.
    let strings: WorkerSlots<DynamicString>
    /// The keys present for the current device, in plist order (omitted keys are left out).
    let presentKeys: WorkerSlots<Int32>
    /// The format's writer, chosen once (one of the two is set); the VM does not depend on it.
    /// Two `let`s of final classes rather than an enum: no reference counting per device.
    private let xmlEmitter: XMLEmitter?
    private let binaryEmitter: BinaryEmitter?
    private let patternScratch: Pattern.Scratch

    /// Binary only: whether common devices are written from the precomputed layout (tests turn
    /// it off to compare with the general path); and how many were.
    var usesFixedLayout: Bool {
        get { binaryEmitter?.usesFixedLayout ?? false }
        set { binaryEmitter?.usesFixedLayout = newValue }
    }
    var fixedLayoutDevices: Int { binaryEmitter?.fixedLayoutDevices ?? 0 }

    /// `xmlNesting` > 0 (XML only) renders the dictionary's body as a fragment, that many tabs deeper,
    /// for a caller that nests it in a larger plist; 0 renders a whole plist. `scratch`: buffers
    /// shared with the other renderers of the same thread (made for this one when nil).
    public init(image: ProgramImage, format: OutputFormat, xmlNesting: Int = 0, scratch: RenderScratch? = nil) {
        precondition(xmlNesting == 0 || format == .xml, "only XML renders as a nested fragment")
        self.image = image
        self.format = format
        program = image.program
        let scratch = scratch ?? RenderScratch(for: [image.program])
        precondition(scratch.fits(program), "the scratch was made for smaller programs")
        self.scratch = scratch
        strings = scratch.strings
        presentKeys = scratch.presentKeys
        patternScratch = scratch.pattern
        xmlEmitter = format == .xml ? XMLEmitter(image: image, nesting: xmlNesting) : nil
        binaryEmitter = format == .binary ? BinaryEmitter(image: image, scratch: scratch) : nil
    }

    /// Renders one device. The returned bytes live in this renderer's buffer and are valid until
    /// the next call; on error nothing of the device is kept. `source` says where a variable's
    /// value came from (and names the device); it is called only when there is an error to report.
    /// Performance-critical: the fleet's hot loop.
    @inline(never)
    public func render(_ values: BufferView<SlotValue>,
                       source: (Variable) -> Location? = { _ in nil }) throws(Problem) -> ByteView {
        precondition(values.count == image.slotCount, "a device row needs one value per slot")
        var state = scratch.state
        defer { scratch.state = state }
        if !deviceProblems.isEmpty { deviceProblems.removeAll(keepingCapacity: true) }
        resolve(values, &state, problems: &deviceProblems)
        if deviceProblems.isEmpty {
            state.output.truncate(to: 0)
            let device = ResolvedDevice(presentKeys: presentKeys, strings: strings, state: state)
            if let binaryEmitter {
                binaryEmitter.emit(device, into: &state.output)
            } else if let failure = xmlEmitter!.emit(device, into: &state.output) {
                deviceProblems.append(failure)
            }
        }
        guard deviceProblems.isEmpty else {
            for i in deviceProblems.indices {
                if let v = deviceProblems[i].variable, let place = source(v) {
                    let key = deviceProblems[i].location.key
                    deviceProblems[i].location = place
                    deviceProblems[i].location.key = key
                }
            }
            throw deviceProblems[0]
        }
        return state.output.view
    }

    // MARK: The VM: resolve variables, build dynamic strings, run the checks

    /// Runs the program over one device. A problem is recorded and the VM goes on: a string
    /// that failed skips its remaining checks, a key with a failed string is left out, and every
    /// other string and key is still resolved, so that every problem of the device is found.
    private func resolve(_ values: BufferView<SlotValue>, _ state: inout State, problems: inout [Problem]) {
        state.text.truncate(to: 0)
        state.presentCount = 0
        let (code, opcodes) = (image.instructions, image.opcodes)
        var pc = 0
        var key = 0
        var current = 0
        /// Where the value of the last variable starts in `state.text`: what its filters act on.
        var part = 0
        var keyFailed = false, stringFailed = false
        /// Records a problem of the current string; `pc` then moves past the string's other checks.
        func fail(_ problem: Problem) {
            problems.append(problem)
            keyFailed = true
            while Self.isCheck(opcodes[pc + 1]) { pc += 1 }
        }
        while true {
            let instruction = Instruction(rawValue: code[pc])
            switch opcodes[pc] {
            case .key:
                key = instruction.operand
                let last = Int(image.constantRunLast[key])
                if last >= 0 {
                    // Constant keys, one after another: all present, nothing to run.
                    for k in key...last { presentKeys[state.presentCount + k - key] = Int32(k) }
                    state.presentCount += last - key + 1
                    pc = Int(image.keyEnd[last]) + 1
                    continue
                }
                keyFailed = false
            case .endKey:
                if !keyFailed {
                    presentKeys[state.presentCount] = Int32(key)
                    state.presentCount += 1
                }
            case .stringBegin:
                current = instruction.operand
                strings[current] = DynamicString(start: Int32(state.text.count))
                stringFailed = false
            case .literal:
                state.text.append(image.bytes(image.texts[instruction.operand]))
            case .lower: state.text.lowercase(from: part)
            case .upper: state.text.uppercase(from: part)
            case .trim: state.text.trim(from: part)
            case .urlencode: state.text.percentEncode(from: part)
            case .replace:
                let (from, to) = instruction.operands
                state.text.replace(from: part, image.bytes(image.texts[from]), with: image.bytes(image.texts[to]))
            case .slice:
                let (start, length) = instruction.operands
                state.text.slice(from: part, start: Instruction.signed(start), length: length == Instruction.noBound ? nil : length)
            case .split:
                let (separator, index) = instruction.operands
                state.text.piece(from: part, separator: image.bytes(image.texts[separator]), index: Instruction.signed(index))
            case .variable, .variableOr:
                // `variableOr s, t` is `variable s` with texts[t] for a missing or empty value.
                let fallback = opcodes[pc] == .variableOr
                let slot = fallback ? instruction.operands.0 : instruction.operand
                if strings[current].firstSlot < 0 { strings[current].firstSlot = Int32(slot) }
                part = state.text.count
                let value = values[slot]
                if !value.bytes.isEmpty {
                    state.text.append(value.bytes)
                } else if fallback {
                    state.text.append(image.bytes(image.texts[instruction.operands.1]))
                } else {
                    switch image.keyPolicy[key] {
                    case .fail:
                        // Recorded; the string goes on, so that its other missing variables are named too.
                        problems.append(Problem(.missingVariable, at: Location(key: program.keys[key].name),
                                                "$(\(program.slots[slot])) is \(value.isMissing ? "missing" : "empty") for this device",
                                                variable: program.slots[slot]))
                        keyFailed = true
                        stringFailed = true
                    case .omit:
                        pc = Int(image.keyEnd[key]) + 1
                        continue
                    case .empty:
                        break
                    }
                }
            case .stringEnd:
                if stringFailed {
                    while Self.isCheck(opcodes[pc + 1]) { pc += 1 }
                    break
                }
                let start = Int(strings[current].start)
                if !DynamicString.scan(state.text.view(start: start, count: state.text.count - start), into: &strings[current]) {
                    fail(deviceError(.invalidUTF8, current, key, value: nil, "the value is not valid UTF-8"))
                }
            case .checkLength:
                let (lo, hi) = instruction.operands
                let n = Int(strings[current].utf16Count)
                if n < lo || (hi != Instruction.noBound && n > hi) {
                    let bound = n < lo ? "fewer than min \(lo)" : "more than max \(hi)"
                    fail(checkError(.length, current, key, state.text, "has \(n) characters (UTF-16 units), \(bound)"))
                }
            case .checkPattern:
                let pattern = image.patterns[instruction.operand]
                let result = pattern._withUnsafeGuaranteedRef { p in
                    p.search(strings[current].bytes(in: state.text), scratch: patternScratch, validatedUTF8: true)
                }
                switch result {
                case .match: break
                case .noMatch:
                    fail(checkError(.pattern, current, key, state.text, "does not match pattern \(pattern.takeUnretainedValue().source)"))
                case .failed(let why):
                    fail(checkError(.patternLimit, current, key, state.text, "could not be checked against \(pattern.takeUnretainedValue().source): \(why)"))
                }
            case .checkValues:
                let v = instruction.operand
                let bytes = strings[current].bytes(in: state.text)
                if !image.valueSet(v, contains: bytes, hash: ByteKeyTable.hash(bytes, foldingASCIICase: false)) {
                    let allowed = program.valueSets[v].display.map { "\"\($0)\"" }.joined(separator: ", ")
                    fail(checkError(.valueNotAllowed, current, key, state.text, "is not one of " + allowed))
                }
            case .halt:
                return
            case .constant, .arrayBegin, .arrayEnd:
                break
            }
            pc += 1
        }
    }

    @inline(__always)
    private static func isCheck(_ op: Instruction.Opcode) -> Bool { op == .checkLength || op == .checkPattern || op == .checkValues }

    private func checkError(_ code: DeviceCode, _ d: Int, _ key: Int, _ text: GrowingStorage<UInt8>, _ what: String) -> Problem {
        Problem(check: code, program: program, string: strings[d], text: text, key: key, what)
    }

    private func deviceError(_ code: DeviceCode, _ d: Int, _ key: Int, value: String?, _ message: String) -> Problem {
        Problem(code, program: program, string: strings[d], key: key, value: value, message)
    }
}

extension Problem {
    /// An error about dynamic string `string` of `key`, naming its first variable.
    init(_ code: DeviceCode, program: Program, string: DynamicString, key: Int, value: String?, _ message: String) {
        let slot = Int(string.firstSlot)
        self.init(code, at: Location(key: program.keys[key].name), message,
                  variable: slot >= 0 ? program.slots[slot] : nil, value: value)
    }

    /// A check failed on a resolved string: the error names the value and its first variable.
    init(check code: DeviceCode, program: Program, string: DynamicString, text: GrowingStorage<UInt8>, key: Int, _ what: String) {
        let value = String(decoding: string.bytes(in: text), as: UTF8.self)
        self.init(code, program: program, string: string, key: key, value: value, "\"\(value)\" \(what)")
    }
}

/// What the VM leaves an emitter: the present keys in order and the resolved, scanned strings.
struct ResolvedDevice {
    let presentKeys: BufferView<Int32>
    let strings: WorkerSlots<DynamicString>
    let text: GrowingStorage<UInt8>

    init(presentKeys: WorkerSlots<Int32>, strings: WorkerSlots<DynamicString>, state: Renderer.State) {
        self.presentKeys = presentKeys.view(prefix: state.presentCount)
        self.strings = strings
        text = state.text
    }

    @inline(__always)
    func bytes(of d: Int) -> ByteView { strings[d].bytes(in: text) }
}
