import AppConfigCore
import Foundation

/// The frame a table's image is saved in (`UserTableImage`, `InventoryImage`): a first line with
/// the kind, its format and the header's length, the header (JSON, padded with spaces to a
/// multiple of 8 from the file's start, a line break), then the table's arrays, each padded to
/// a multiple of 8 so that it is read in place from the mapped file.
struct ImageFile {
    /// `kind format `, as the file starts.
    let magic: String
    /// What the header and the values are padded to.
    static let alignment = 8

    init(kind: String, format: Int) { magic = "\(kind) \(format) " }

    /// The first line's bytes: `magic` and the header's length, ten digits, a line break.
    var firstLine: Int { magic.utf8.count + 11 }

    /// The first line and the header holding `fields`; nil when they cannot be written.
    func head(_ fields: [String: Any]) -> [UInt8]? {
        guard let json = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]) else { return nil }
        // JSON, spaces (which JSON allows after it) and a line break, to a multiple of 8 from the file's start.
        let spaces = Self.padding(firstLine + json.count + 1)
        let length = String(json.count + spaces + 1)
        guard length.count <= 10 else { return nil }
        return Array((magic + String(repeating: "0", count: 10 - length.count) + length + "\n").utf8) + Array(json)
            + [UInt8](repeating: 0x20, count: spaces) + [0x0A]
    }

    /// The header's fields and where the arrays start, from an image's bytes; nil when they are
    /// not an image of this kind and format.
    func header(_ bytes: ByteView) -> (fields: [String: Any], end: Int)? {
        guard bytes.count >= firstLine, let length = headerLength(bytes[view: 0..<firstLine]), firstLine + length <= bytes.count,
              let fields = Self.fields(bytes[view: firstLine..<(firstLine + length)]) else { return nil }
        return (fields, firstLine + length)
    }

    /// An image's header fields, read without the rest of the file.
    func header(ofFile path: String) -> [String: Any]? {
        guard let sections = try? FileSections(path), let first = try? sections.bytes(at: 0, count: firstLine),
              let length = first.withView(headerLength), length < 1 << 24,
              let json = try? sections.bytes(at: firstLine, count: length) else { return nil }
        return json.withView(Self.fields)
    }

    /// The header's length its first line (`firstLine` bytes) gives, nil when it is not an image's.
    private func headerLength(_ first: ByteView) -> Int? {
        guard first.count == firstLine, first.starts(with: magic.utf8), first[firstLine - 1] == 0x0A,
              let length = Int(String(decoding: first[view: magic.utf8.count..<(firstLine - 1)], as: UTF8.self)), length >= 0 else { return nil }
        return length
    }

    private static func fields(_ json: ByteView) -> [String: Any]? {
        json.withUnsafeBytes { try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] }
    }

    /// The bytes that pad `count` to a multiple of `alignment`.
    static func padding(_ count: Int) -> Int { (alignment - count % alignment) % alignment }
}

/// An image's values, read where they lie in its mapping, to which a night appends the values it
/// read (valid while `mapping` is); also the users image's ranges, in a mapping of their own, to
/// which it appends the rows of the users it read (`UserTableImage.Contents.rangesAppending`).
struct MappedPool {
    let mapping: MappedFile
    let pool: ByteView

    /// Where the pool starts in the mapping.
    var start: Int {
        pool.withUnsafeBufferPointer { Int(bitPattern: $0.baseAddress) } - mapping.view.withUnsafeBufferPointer { Int(bitPattern: $0.baseAddress) }
    }

    /// Lets the pages of the pool's `range` go (copied, not needed again).
    func release(_ range: Range<Int>) {
        mapping.release((start + range.lowerBound)..<(start + range.upperBound))
    }

    /// The pool with `more` values after it, written in place over what follows the pool in
    /// the mapping (its zeros and the tables read by then); nil when they do not fit in `room`
    /// bytes there (nil: to the mapping's end) or the mapping is not writable.
    func extended(with more: ByteView, room: Int? = nil) -> ByteView? {
        let start = start, end = start + pool.count
        guard more.count <= min(mapping.bytes.count - end, room ?? .max) else { return nil }
        mapping.bytes.copy(more, to: end)
        return mapping.view[view: start..<(end + more.count)]
    }

    /// The pool and `more` after it: in place (`extended`), else copied a piece at a time, each
    /// piece's pages of the image let go once copied (the image and its copy never stand whole
    /// at once). The second value owns the copy.
    func appending(_ more: ByteView, room: Int? = nil) -> (ByteView, GrowingBuffer<UInt8>?) {
        if let extended = extended(with: more, room: room) { return (extended, nil) }
        let copy = GrowingBuffer<UInt8>(capacity: pool.count + more.count + 8)
        let piece = 16 << 20
        for first in Swift.stride(from: 0, to: pool.count, by: piece) {
            let end = min(first + piece, pool.count)
            copy.append(pool[view: first..<end])
            release(first..<end)
        }
        copy.append(more)
        return (copy.bytes, copy)
    }
}
