import AppConfigCore
import AppConfigOutput
import AppConfigSources
import Foundation

extension RenderJob {
    /// Where this run saves its inventory's image (`InventoryImage`: the rows it read, with the
    /// file's records) and where it looks for last night's: beside its output (`FILE.tar.inventory`,
    /// `OUT.inventory`), then beside `--since`, as for the directory's (`directoryImagePlaces`).
    var inventoryImagePlaces: (save: String?, read: [String]) { imagePlaces(suffix: ".inventory") }
}

/// What a run did with inventory images: read its rows from one (only the records with new bytes
/// parsed), and where it saves tonight's once it has published.
struct InventoryImageUse {
    var saveTo: String?
    var incremental: RunSummary.InventoryIncremental?
    /// The image the rows were read from, kept beside the output instead of tonight's (`ImageRewrite`).
    var keptFrom: String?

    init(saveTo: String? = nil, inventory: InventoryTable? = nil) {
        self.saveTo = saveTo
        guard let read = inventory?.incremental else { return }
        incremental = .init(image: read.image, records: read.records, recordsRead: read.recordsRead, rowsRead: read.rowsRead)
        if ImageRewrite.keeps(read: read.recordsRead, of: read.records) {
            keptFrom = read.image
            if read.image == saveTo { self.saveTo = nil }
        }
    }

    /// Writes the table's image under a temporary name beside the output on a thread of its own,
    /// while the run publishes (as the directory's: `DirectoryImageUse.startSaving`). Nil when
    /// there is no place, an image is kept, or the table kept no records.
    func startSaving(_ inventory: InventoryTable) -> WorkBeside<AtomicFile?, Never>? {
        guard saveTo != nil, keptFrom == nil, inventory.recordHashes != nil else { return nil }
        return WorkBeside { () -> AtomicFile? in write(inventory) }
    }

    /// Once the run has published: the image under its name (the one kept, linked; else the one
    /// written), a shortcut for the next run, not an output: one that cannot be saved costs that
    /// run a whole read. A run that published nothing saves nothing.
    func finish(_ saving: WorkBeside<AtomicFile?, Never>?, inventory: InventoryTable, published: Bool) {
        let written = saving?.value() ?? nil
        guard published, let path = saveTo else { written?.discard(); return }
        guard let keptFrom else { try? written?.commit(); return }
        // Kept but not linked (another file system): tonight's written now.
        if !AtomicFile.link(keptFrom, to: path) { try? write(inventory)?.commit() }
    }

    private func write(_ inventory: InventoryTable) -> AtomicFile? {
        saveTo.flatMap { path in writeImage(to: path) { write throws(Problem) in try InventoryImage.withPieces(of: inventory, write) } }
    }
}
