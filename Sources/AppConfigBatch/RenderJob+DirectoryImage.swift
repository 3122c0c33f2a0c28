import AppConfigCore
import AppConfigOutput
import AppConfigSources
import Foundation

extension RenderJob {
    /// Where this run saves the user table it reads from an LDIF file (`UserTableImage`), and where
    /// it looks for one saved before, in order: beside its archive (`FILE.tar.users`) or its folder
    /// output (`OUT.users`, as `OUT.lock` and `OUT.generations` are: outside what is served), then
    /// the same beside `--since`. Nothing for a dry run or an archive on standard output.
    var directoryImagePlaces: (save: String?, read: [String]) { imagePlaces(suffix: ".users") }

    /// Where this run saves an image with `suffix` and where it looks for last night's (see
    /// `directoryImagePlaces`).
    func imagePlaces(suffix: String) -> (save: String?, read: [String]) {
        let save = output.sideFile(suffix)
        var read = save.map { [$0] } ?? []
        if let since = nightly.since.map(PathText.trimmed) {
            // A generation folder named itself: the output whose generations' folder it is in.
            let folder = PathText.folder(of: since)
            let candidate = folder.hasSuffix(".generations") ? String(folder.dropLast(".generations".count)) + suffix : since + suffix
            if !read.contains(candidate) { read.append(candidate) }
        }
        return (save, output == .dryRun ? [] : read)
    }

    /// The directory's users, and what became of its image. An LDIF file whose fingerprint and
    /// reading match a saved image's is not parsed; one that is parsed may be saved for the next
    /// run (`DirectoryImageUse.save`), when it did not change while it was read.
    func loadDirectory(_ sources: FleetSources, for inventory: InventoryTable, fingerprints: FingerprintTask,
                       observer: Observer) throws(Problem) -> (UserTable?, DirectoryImageUse) {
        let places = directoryImagePlaces
        guard case .ldif(let path) = sources.directory, !places.read.isEmpty else {
            return (try sources.loadDirectory(for: inventory, warning: observer.warning), DirectoryImageUse())
        }
        let before = FileState(path: path)
        let keyText = { (fingerprint: String) in UserTableImage.key(fingerprint: fingerprint, map: sources.attributes) }
        // The file as it was when an image was made (the same inode, size and times): its
        // fingerprint is the image's, not made again (at 10M on disk, reading the 4 GB file was
        // most of a night).
        for place in places.read {
            guard let state = before?.text, let fingerprint = UserTableImage.sourceFingerprint(place, state: state),
                  let table = UserTableImage.load(place, key: keyText(fingerprint), source: path, columns: sources.attributes.columns) else { continue }
            fingerprints.record(fingerprint, of: path)
            return (table, DirectoryImageUse(loadedFrom: place, saveTo: place == places.save ? nil : places.save, key: keyText(fingerprint), sourceState: state))
        }
        // The manifest's too. Hashed on a core of its own while an image is read, or the file
        // parsed, on the others; whether it changed meanwhile is told by its state.
        let hashing = WorkBeside(yielding: true) { fingerprints.fingerprint(of: path) }
        // The state the image records: the file's, when it did not change while it was hashed.
        func stateHashed() -> String? { before.flatMap { FileState(path: path) == $0 ? $0.text : nil } }
        for place in places.read {
            // An image of a file of another size is not tonight's: its table is not built.
            if let size = before?.size, let made = UserTableImage.madeFrom(place), !made.hasPrefix("\(size) ") { continue }
            // An unreadable file ("-") matches no image: images are saved only with a fingerprint.
            if let table = UserTableImage.load(place, keyOnceRead: { keyText(hashing.value()) }, source: path, columns: sources.attributes.columns) {
                // Found beside --since: linked beside this run's output too, for the night after.
                return (table, DirectoryImageUse(loadedFrom: place, saveTo: place == places.save ? nil : places.save, key: keyText(hashing.value()),
                                                 sourceState: stateHashed()))
            }
        }
        // An image made from another version of the file, read the same way: only the segments
        // with new bytes are read (`IncrementalDirectory`), when that gives what a whole read would.
        let sameReading = { (key: String) in key.drop { $0 != "\n" } == keyText("").drop { $0 != "\n" } }
        for place in places.read {
            guard let image = try? UserTableImage.contents(place, source: path, columns: sources.attributes.columns, writable: true), sameReading(image.key),
                  let read = try IncrementalDirectory.load(image, file: path, map: sources.attributes), image.mapping.change() == nil else { continue }
            let (fingerprint, state) = (hashing.value(), stateHashed())
            // Changed while read: as after a whole read, the manifest gets the file as it is now, and no image is saved.
            if state == nil { _ = fingerprints.fingerprint(of: path) }
            guard let state, let save = places.save, fingerprint != "-" else {
                return (read.table, DirectoryImageUse(incremental: read.summary(image: place)))
            }
            // Little read since the image was made: it is kept beside the output (linked), not
            // written again (the night after reads what changed since it, a little more).
            let keep = ImageRewrite.keeps(read: read.segmentsRead, of: read.table.segments?.segments.count ?? 0)
            return (read.table, DirectoryImageUse(saveTo: keep && place == save ? nil : save, key: keyText(fingerprint), sourceState: state,
                                                  incremental: read.summary(image: place), keptFrom: keep ? place : nil))
        }
        // With its segments, for the night after's incremental read.
        let users = try sources.loadDirectory(for: inventory, keepingSegments: places.save != nil, warning: observer.warning)
        let fingerprint = hashing.value()
        // Changed while read: the manifest gets the file as it is now (hashed again), and no image is saved.
        guard let state = stateHashed() else {
            _ = fingerprints.fingerprint(of: path)
            return (users, DirectoryImageUse())
        }
        guard let save = places.save, fingerprint != "-" else { return (users, DirectoryImageUse()) }
        return (users, DirectoryImageUse(saveTo: save, key: keyText(fingerprint), sourceState: state))
    }
}

/// What a run did with a directory image: loaded the users from one, or has one to save once it
/// has published (`UserTableImage`).
struct DirectoryImageUse {
    var loadedFrom: String?
    var saveTo: String?
    var key = ""
    /// The directory file's state when it was hashed for `key` (`FileState.text`), kept in the image.
    var sourceState: String?
    /// The image of another version of the file the users were taken from, only the segments
    /// with new bytes read.
    var incremental: RunSummary.DirectoryIncremental?
    /// That image, kept beside the output instead of tonight's (`ImageRewrite`).
    var keptFrom: String?

    /// Writes the table's image under a temporary name beside the output on a thread of its own
    /// (its value: the file, not yet under its name, or nil), while the run publishes: written
    /// after the publish, on one core, it was the end of every large job, the other core idle.
    /// Nil when there is nothing to write: no place, or an image loaded or kept (linked once published).
    func startSaving(_ users: UserTable) -> WorkBeside<AtomicFile?, Never>? {
        guard saveTo != nil, loadedFrom == nil, keptFrom == nil else { return nil }
        return WorkBeside { () -> AtomicFile? in write(users) }
    }

    /// Once the run has published: the image saved beside the output (a link to the image it was
    /// loaded or kept from, else the one `startSaving` wrote), a shortcut for the next run, not an
    /// output, so one that cannot be saved (no room, a table with groups) costs that run a parse,
    /// nothing else. A run that published nothing saves no shortcut: what was written goes.
    func finish(_ saving: WorkBeside<AtomicFile?, Never>?, users: UserTable?, published: Bool) {
        let written = saving?.value() ?? nil
        guard published, let path = saveTo else { written?.discard(); return }
        guard let linked = loadedFrom ?? keptFrom else { try? written?.commit(); return }
        // Loaded (or kept) but not linked (another file system): tonight's written now.
        if !AtomicFile.link(linked, to: path) { try? users.flatMap(write)?.commit() }
    }

    /// The table's image under a temporary name beside `saveTo`; nil when it cannot be written.
    private func write(_ users: UserTable) -> AtomicFile? {
        saveTo.flatMap { path in
            writeImage(to: path) { write throws(Problem) in
                try UserTableImage.withPieces(of: users, key: key, sourceState: sourceState, write)
            }
        }
    }
}

/// An image (in pieces, which `withPieces` gives `write`: nil when there is no image) under a
/// temporary name beside `path`, readable by the run's user only (it holds the directory's or
/// the inventory's names and addresses); nil when it cannot be written.
func writeImage(to path: String, _ withPieces: (_ write: ([ByteView]) throws(Problem) -> Void) throws(Problem) -> Void?) -> AtomicFile? {
    guard let file = try? AtomicFile(path: path) else { return nil }
    fchmod(file.descriptor, 0o600)
    let written: Void? = try? withPieces { pieces throws(Problem) in try writeAllGathered(file.descriptor, pieces, path: path) }
    guard written != nil else { file.discard(); return nil }
    return file
}

extension IncrementalDirectory.Read {
    func summary(image: String) -> RunSummary.DirectoryIncremental {
        .init(image: image, segments: table.segments?.segments.count ?? 0, segmentsRead: segmentsRead, usersRead: usersRead)
    }
}

/// When a night that read an image of another version of its file incrementally writes tonight's
/// image, and when it keeps the one it read: an image is written whole (at 10M devices on disk,
/// 3.3 GB with the inventory's, most of a night's publish), while what a night reads from an older
/// one grows by only what changed since. Kept while at most 1/32 of the file's pieces were read
/// (with 1% changed a night, the images are written one night in three or four).
enum ImageRewrite {
    static let share = 32

    static func keeps(read: Int, of count: Int) -> Bool { count > 0 && read * share <= count }
}
