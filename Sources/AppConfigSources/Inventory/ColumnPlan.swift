import AppConfigCore

/// Which columns of an inventory are kept, and what each is for: the mapped device variables, the
/// device key, the user key, and the extras (`$(device.<Column>)`, or every column).
struct ColumnPlan {
    /// Header indices of the kept columns, in header order.
    let keptColumns: [Int]
    /// The kept-column slot of each device variable that maps to a column.
    let variableSlots: [DeviceVariable: Int]
    /// The kept-column slot of each user variable the inventory carries (`--map`, or by name
    /// when there is no directory).
    let userVariableSlots: [UserVariable: Int]
    let deviceKeySlot: Int
    let userKeySlot: Int?
    /// Whose export this is: which columns name the user and carry the user's variables.
    let preset: InventoryPreset

    init(header: [String], folded: FoldedHeader, file: String, options: InventoryOptions) throws(Problem) {
        func column(_ name: String, _ what: String) throws(Problem) -> Int {
            guard let c = folded.index(of: name) else {
                throw Problem(.csvUnknownColumn, at: Location(file: file, line: 1),
                              "no column \"\(name)\" (\(what)); columns: " + Self.listed(header.filter { !$0.isEmpty }))
            }
            return c
        }
        var variableColumns: [DeviceVariable: Int] = [:]
        for v in DeviceVariable.allCases {
            if let name = options.columnMap[v] { variableColumns[v] = try column(name, "--map \(v.rawValue)") }
            else if let c = folded.column(for: v) { variableColumns[v] = c }
        }
        let deviceKeyColumn: Int
        if let name = options.deviceKeyColumn { deviceKeyColumn = try column(name, "--device-key") }
        else if let c = variableColumns[.udid] ?? variableColumns[.serialNumber] { deviceKeyColumn = c }
        else { throw Problem(.csvNoDeviceKey, at: Location(file: file, line: 1), "no UDID or Serial Number column to name devices; give --device-key COLUMN") }
        // Only the variables read keep their columns (most of an export's bytes are others).
        if let read = options.deviceVariables { variableColumns = variableColumns.filter { read.contains($0.key) } }
        let preset = options.preset ?? InventoryPreset.detect(folded)
        self.preset = preset
        var userKeyColumn: Int?
        if let name = options.userKeyColumn { userKeyColumn = try column(name, "--user-key") }
        else { userKeyColumn = folded.firstColumn(named: preset.userKeyColumns) }
        var userColumns: [UserVariable: Int] = [:]
        for v in UserVariable.allCases {
            if let name = options.userColumnMap[v] { userColumns[v] = try column(name, "--map \(v.rawValue)") }
            else if options.userVariablesFromColumns, let c = folded.firstColumn(named: preset.columns(for: v)) {
                userColumns[v] = c
            }
        }
        var kept = Set(variableColumns.values).union(userColumns.values)
        kept.insert(deviceKeyColumn)
        if let userKeyColumn { kept.insert(userKeyColumn) }
        // Columns an assignment matches on: kept where they exist; the assignment says if one does not.
        for name in options.matchColumns { if let c = folded.index(of: name) { kept.insert(c) } }
        if let extras = options.extraColumns {
            for name in extras { kept.insert(try column(name, "$(device.\(name))")) }
        } else {
            kept.formUnion(header.indices)
        }
        let keptColumns = kept.sorted()
        self.keptColumns = keptColumns
        variableSlots = variableColumns.mapValues { keptColumns.firstIndex(of: $0)! }
        userVariableSlots = userColumns.mapValues { keptColumns.firstIndex(of: $0)! }
        deviceKeySlot = keptColumns.firstIndex(of: deviceKeyColumn)!
        userKeySlot = userKeyColumn.map { keptColumns.firstIndex(of: $0)! }
    }

    /// The first 30 names, then how many more: a wide export's header would drown the message.
    static func listed(_ names: [String]) -> String {
        names.count <= 30 ? names.joined(separator: ", ")
                          : names.prefix(30).joined(separator: ", ") + " and \(names.count - 30) more"
    }
}
