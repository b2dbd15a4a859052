/// Attache's version: what `attache --version` prints and the fetch engine's User-Agent names.
public enum AttacheVersion {
    public static let string = "0.1"
}
