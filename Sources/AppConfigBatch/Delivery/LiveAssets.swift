import AppConfigCore
import AppConfigOutput
import AppConfigSpec
import Digest

/// The assets a generation's live sets name, each once, in the order of their paths. Tonight's
/// rendered devices' own assets (one per device and extension: most of a fleet's) are kept as
/// references into the encoding's per-position digests, 16 bytes a name where a copy of each name
/// was 40, at a DDM run's peak; the other names (credential documents, carried devices' assets)
/// are kept whole. The two sorted lists are merged as they are read.
struct LiveAssets: LiveFiles {
    /// A rendered device's asset: the first 8 bytes of its digest as a number in path order
    /// (the sort compares these, and the rest only where they agree), and where the digest is.
    private struct Reference {
        var prefix: UInt64
        var position: UInt32
        var slots: UInt32
    }

    private var rendered: [Reference] = []
    private var digests: [DigestSlots] = []
    private var others: [AssetName] = []

    init() {}

    /// `others` in any order, repeats allowed.
    init(others: [AssetName]) {
        self.others = others
        sortKeepingEachOnce()
    }

    /// Names the rendered devices' assets by `digests` (an encoding's per-position slots).
    init(digests: [DigestSlots], reservingRendered count: Int) {
        self.digests = digests
        rendered.reserveCapacity(count)
    }

    /// Asset `slots` of the device at `position`.
    mutating func addRendered(position: Int, slots: Int) {
        let digest = digests[slots].digest(at: position)
        rendered.append(Reference(prefix: digest.a.byteSwapped, position: UInt32(position), slots: UInt32(slots)))
    }

    mutating func addOther(_ name: AssetName) { others.append(name) }

    /// Once every name is added: each list in order, each name once (sorted in place).
    mutating func sortKeepingEachOnce() {
        let digests = digests
        func name(_ r: Reference) -> AssetName { Self.name(r, in: digests) }
        rendered.sort { x, y in x.prefix != y.prefix ? x.prefix < y.prefix : AssetName.precedes(name(x), name(y)) }
        Self.keepFirstOfEach(&rendered) { x, y in x.prefix == y.prefix && name(x) == name(y) }
        others.sort(by: AssetName.precedes)
        Self.keepFirstOfEach(&others, same: ==)
    }

    private static func name(_ r: Reference, in digests: [DigestSlots]) -> AssetName {
        AssetName(digest: digests[Int(r.slots)].digest(at: Int(r.position)), form: 0)
    }

    private func name(_ r: Reference) -> AssetName { Self.name(r, in: digests) }

    /// Removes each element equal to the one before it, in place (a second array of them was the
    /// size of the first, at the peak).
    private static func keepFirstOfEach<T>(_ list: inout [T], same: (T, T) -> Bool) {
        var kept = 0
        for i in list.indices where kept == 0 || !same(list[i], list[kept - 1]) {
            list[kept] = list[i]
            kept += 1
        }
        list.removeSubrange(kept...)
    }

    /// The rounds the names are read in: the rendered names', each with the other names that fall
    /// among them (or the other names', when no device was rendered).
    var rounds: Int { rendered.isEmpty ? others.count : rendered.count }

    /// Every name, in order.
    func forEach<E: Error>(_ body: (AssetName) throws(E) -> Void) throws(E) {
        try forEach(inRounds: 0..<rounds, body)
    }

    /// The names of `range` of the rounds, in order: consecutive ranges read every name once.
    func forEach<E: Error>(inRounds range: Range<Int>, _ body: (AssetName) throws(E) -> Void) throws(E) {
        if rendered.isEmpty {
            for n in others[range] { try body(n) }
            return
        }
        var j = firstOther(notBefore: range.lowerBound)
        let end = firstOther(notBefore: range.upperBound)
        for i in range {
            let name = name(rendered[i])
            while j < end && AssetName.precedes(others[j], name) {
                try body(others[j])
                j += 1
            }
            if j < end && others[j] == name { j += 1 }
            try body(name)
        }
        while j < end {
            try body(others[j])
            j += 1
        }
    }

    /// The first other name that does not go before rendered name `i` (the first and the
    /// last round take the others before and after every rendered name).
    private func firstOther(notBefore i: Int) -> Int {
        if i == 0 { return 0 }
        if i == rendered.count { return others.count }
        let bound = name(rendered[i])
        var (low, high) = (0, others.count)
        while low < high {
            let middle = (low + high) / 2
            if AssetName.precedes(others[middle], bound) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// `assets.live`: a line per live asset, made in rounds on every core as it is written (made
    /// whole, its text was as large as the fleet's asset paths, at the run's peak).
    func closingFile() -> ClosingFile { closingFile(named: "assets.live") }

    /// Each asset's path, the first half of its digest and whether it is a secret document.
    func forEach(_ body: (_ relative: String, _ key: UInt128, _ secret: Bool) throws(Problem) -> Void) throws(Problem) {
        try forEach { (name: AssetName) throws(Problem) in
            var path: [UInt8] = []
            name.appendPath(to: &path)
            let relative = String(decoding: path, as: UTF8.self)
            try body(relative, name.digest.firstHalf, relative.hasPrefix("secret-assets/"))
        }
    }

    func closingFile(named name: String) -> ClosingFile {
        ClosingFile(name: name) { emit throws(Problem) in
            try bytesInRounds(count: rounds, make: { range, out in
                forEach(inRounds: range) { n in
                    n.appendPath(to: &out)
                    out.append(0x0A)
                }
            }, emit: emit)
        }
    }
}
