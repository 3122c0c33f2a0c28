import AppConfigCore
import AppConfigSpec
import Digest
import Foundation

extension ShardMerge {
    /// One line of a shard's `index.jsonl`: its device key (in the shard's key bytes), the line.
    struct IndexLine {
        var key: Range<Int>
        var line: Range<Int>
        var removed: Bool
        /// A removal that wrote a file of its own (an MDM removal command, an empty set file).
        var hasFile: Bool
    }

    /// A shard with its index taken apart and its cursors for the merge.
    final class Input {
        let output: ShardOutput
        let index: [UInt8]
        var keys: [UInt8] = []
        var devices: [IndexLine] = []
        var removals: [IndexLine] = []
        let declarations: [UInt8]
        /// Line starts of `declarations.jsonl` (and its end).
        var declarationLines: [Int] = []
        /// Cursors: the next member, the next declaration line, the next manifest entry.
        var member = 0
        var declaration = 0
        var entry = 0
        /// The assets this shard wrote so far (the shard's writer stored each once).
        var seen = Set<AssetName>()
        /// The files of this shard its index names, each with the digest its bytes must have (nil: a
        /// secret document's, named by a keyed hash; a declaration's or a set's).
        var paths: [(String, SHA256Digest?)] = []

        init(_ output: ShardOutput) throws(Problem) {
            self.output = output
            index = output.file("index.jsonl")
            declarations = output.file("declarations.jsonl")
            try splitIndex()
            var start = 0
            declarations.withView { b in
                for (i, c) in b.enumerated() where c == 0x0A {
                    declarationLines.append(start)
                    start = i + 1
                }
            }
            declarationLines.append(start)
        }

        func key(_ l: IndexLine) -> [UInt8] { Array(keys[l.key]) }

        /// Appends the device key of the JSON string literal at `start` (its opening quote) and
        /// returns where the literal ends. Most keys need no escape and are their bytes; a key
        /// with one (a quote, a backslash, a control character) is read by the values' JSON reader.
        static func appendKey(literalAt start: Int, of b: ByteView, to keys: inout [UInt8]) -> Int? {
            guard start < b.count, b[start] == UInt8(ascii: "\"") else { return nil }
            var i = start + 1, escaped = false
            while i < b.count && b[i] != UInt8(ascii: "\"") {
                if b[i] == UInt8(ascii: "\\") { escaped = true; i += 1 }
                i += 1
            }
            guard i < b.count else { return nil }
            guard escaped else {
                keys.append(b[view: (start + 1)..<i])
                return i + 1
            }
            guard case .string(let key)? = try? JSONReader.document(Array(b[start...i]), file: "index.jsonl").kind else { return nil }
            keys += key.utf8
            return i + 1
        }

        private func splitIndex() throws(Problem) {
            let prefix = Array(#"{"device":"#.utf8)
            let removedEnd = Array(#","removed":true}"#.utf8)
            let pathField = Array(#","path":""#.utf8)
            var failure: String?
            var lineNumber = 0
            index.withView { b in
                var start = 0
                while start < b.count {
                    lineNumber += 1
                    var end = start
                    while end < b.count && b[end] != 0x0A { end += 1 }
                    let line = b[view: start..<end]
                    let keyStart = keys.count
                    guard end < b.count, line.starts(with: prefix),
                          let after = Self.appendKey(literalAt: start + prefix.count, of: b, to: &keys) else {
                        failure = "line \(lineNumber) is not an index line appconfig wrote"
                        return
                    }
                    let removed = line.count >= removedEnd.count && line.suffix(removedEnd.count).elementsEqual(removedEnd)
                    let hasFile = removed && b[view: after..<end].firstRange(of: pathField) != nil
                    let entry = IndexLine(key: keyStart..<keys.count, line: start..<(end + 1), removed: removed, hasFile: hasFile)
                    if removed {
                        removals.append(entry)
                    } else {
                        guard removals.isEmpty else { failure = "line \(lineNumber): a device after the removals"; return }
                        devices.append(entry)
                    }
                    start = end + 1
                }
            }
            if let failure {
                throw Problem(.mergeInput, at: Location(file: output.path), "\(output.path): index.jsonl \(failure)")
            }
        }
    }
}
