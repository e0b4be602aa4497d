import Foundation
import PackagePlugin

/// Embeds the schema, `migrations/*.sql` (SQLite) and `migrations/postgres/*.sql`
/// (PostgreSQL), into ReplayStore as Swift source at build time, so the binaries carry
/// their schema (no resource bundle to find beside them at run time) and the SQL exists
/// once in the repository, as SQL. SwiftPM's own `.embedInCode` resources would do the
/// embedding too, but only for files inside the target's folder and under names derived
/// from the file name, which both stores' `0001_initial.sql` would share; the migrations
/// stay where people read the schema, and the script names each by its file.
@main
struct EmbedMigrations: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let root = context.package.directoryURL
        let script = root.appending(path: "tools/embed-migrations.sh")
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
        let inputs = try ["migrations", "migrations/postgres"].flatMap { folder in
            try FileManager.default.contentsOfDirectory(
                at: root.appending(path: folder), includingPropertiesForKeys: nil
            ).filter { $0.pathExtension == "sql" }
        }
        return [
            .buildCommand(
                displayName: "Embedding the schema migrations",
                executable: URL(filePath: "/bin/bash"),
                arguments: [script.path(percentEncoded: false), output.path(percentEncoded: false)],
                inputFiles: [script] + inputs,
                outputFiles: [output])
        ]
    }
}
