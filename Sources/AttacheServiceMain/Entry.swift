/// attache-serve runs the service, or — when its first argument is `worker`, as `attache worker`
/// passes it — the queue worker: both are long-running, both link Hummingbird (the worker for its
/// optional metrics port), and neither belongs in `attache`, which starts once per payload.
/// `config` prints what either would run with, read by their own code.
@main
enum Entry {
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "worker" {
            await WorkerCommand.main(Array(arguments.dropFirst()))
        } else if arguments.first == "relay" {
            await RelayCommand.main(Array(arguments.dropFirst()))
        } else if arguments.first == "lab" {
            await LabCommand.main(Array(arguments.dropFirst()))
        } else if arguments.first == "tenants" {
            await TenantsCommand.main(Array(arguments.dropFirst()))
        } else if arguments.first == "config" {
            await ConfigCommand.main(Array(arguments.dropFirst()))
        } else {
            await ServeCommand.main(arguments)
        }
    }
}
