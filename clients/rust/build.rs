//! Generates the baton.v1 client stubs from the repository's proto at build
//! time (tonic-prost-build; needs `protoc`, Debian's protobuf-compiler, or
//! `PROTOC` naming one), and the server stubs for the unit tests' fake
//! sidecar only (`cfg(test)`).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_root = "../../proto";
    let proto = "../../proto/baton/v1/leader_election.proto";
    println!("cargo:rerun-if-changed={proto}");
    tonic_prost_build::configure()
        .build_server(true)
        .server_mod_attribute("baton.v1", "#[cfg(test)]")
        .build_transport(true)
        .compile_protos(&[proto], &[proto_root])?;
    Ok(())
}
