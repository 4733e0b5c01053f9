//! Records the Cargo profile the binary is built with (`release`, `dist`, …), which
//! benchmark reports print beside their figures. Cargo passes only `debug` or `release`
//! in `PROFILE`; the profile's own name is the directory under the target directory
//! that `OUT_DIR` sits in (`target/<profile>/build/<pkg>/out`).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = std::env::var("OUT_DIR").unwrap_or_default();
    let parts: Vec<&str> = out.split(std::path::MAIN_SEPARATOR).collect();
    // …/<profile>/build/<pkg>/out: the profile is four components from the end (a
    // cross-compiling target directory adds the triple before it, which is fine).
    let profile = parts
        .len()
        .checked_sub(4)
        .and_then(|i| parts.get(i))
        .copied()
        .unwrap_or("unknown");
    println!("cargo:rustc-env=STACKMASK_PROFILE={profile}");
}
