//! An environment's certificates and keys, generated afresh for each one (ECDSA P-256 with
//! rcgen on ring):
//!
//! * a CA, which signs everything below, is the apiserver's `--client-ca-file` and the
//!   controller-manager's cluster signing key (for CSRs) and root CA for service accounts;
//! * the apiserver's serving certificate for 127.0.0.1, localhost and the in-cluster names;
//! * client certificates: the admin (group `system:masters`) and the controller-manager
//!   (`system:kube-controller-manager`, whose RBAC role the apiserver bootstraps);
//! * the service-account token signing key;
//! * a random bearer token for a second admin identity (`--token-auth-file`).

use std::fmt::Write as _;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, SerialNumber,
};

use crate::Error;

type Result<T> = std::result::Result<T, Error>;

/// The admin identity's user name and group (cluster-admin through `system:masters`).
pub(crate) const ADMIN_USER: &str = "envtest-admin";
const ADMIN_GROUP: &str = "system:masters";
/// The controller-manager's user name (RBAC bootstraps `system:kube-controller-manager`).
const CONTROLLER_MANAGER_USER: &str = "system:kube-controller-manager";
/// The in-cluster address of the `kubernetes` Service (the first address of the range).
pub(crate) const SERVICE_CLUSTER_IP_RANGE: &str = "10.0.0.0/24";
const KUBERNETES_SERVICE_IP: &str = "10.0.0.1";

/// A client identity: certificate and key, PEM.
#[derive(Debug, Clone)]
pub(crate) struct ClientIdentity {
    pub(crate) cert_pem: String,
    pub(crate) key_pem: String,
}

/// Everything generated, with the paths of the files the servers read.
#[derive(Debug)]
pub(crate) struct Pki {
    pub(crate) ca_pem: String,
    pub(crate) ca_cert: PathBuf,
    pub(crate) ca_key: PathBuf,
    pub(crate) serving_cert: PathBuf,
    pub(crate) serving_key: PathBuf,
    pub(crate) service_account_key: PathBuf,
    pub(crate) service_account_public_key: PathBuf,
    pub(crate) token_file: PathBuf,
    pub(crate) admin: ClientIdentity,
    pub(crate) admin_token: String,
    pub(crate) controller_manager: ClientIdentity,
}

/// Generates the PKI into `dir` (which is created; files are private to the user).
pub(crate) fn generate(dir: &Path) -> Result<Pki> {
    fs::create_dir_all(dir).map_err(Error::io(format!("creating {}", dir.display())))?;

    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.distinguished_name = name("kclient-envtest-ca", None);
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca_params.serial_number = Some(random_serial()?);
    let ca_key = KeyPair::generate()?;
    let ca_key_pem = ca_key.serialize_pem();
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key)?;
    let ca_pem = ca.pem();

    let serving_names: Vec<String> = [
        "127.0.0.1",
        "localhost",
        KUBERNETES_SERVICE_IP,
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut serving_params = CertificateParams::new(serving_names)?;
    serving_params.distinguished_name = name("kube-apiserver", None);
    serving_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let serving = leaf(serving_params, &ca)?;

    let admin = client(ADMIN_USER, Some(ADMIN_GROUP), &ca)?;
    let controller_manager = client(CONTROLLER_MANAGER_USER, None, &ca)?;
    let service_account = KeyPair::generate()?;
    let admin_token = random_hex(32)?;

    let pki = Pki {
        ca_pem: ca_pem.clone(),
        ca_cert: dir.join("ca.crt"),
        ca_key: dir.join("ca.key"),
        serving_cert: dir.join("apiserver.crt"),
        serving_key: dir.join("apiserver.key"),
        service_account_key: dir.join("service-account.key"),
        service_account_public_key: dir.join("service-account.pub"),
        token_file: dir.join("tokens.csv"),
        admin,
        admin_token,
        controller_manager,
    };
    write_private(&pki.ca_cert, &ca_pem)?;
    write_private(&pki.ca_key, &ca_key_pem)?;
    write_private(&pki.serving_cert, &serving.cert_pem)?;
    write_private(&pki.serving_key, &serving.key_pem)?;
    write_private(&pki.service_account_key, &service_account.serialize_pem())?;
    // --service-account-key-file wants the public key (it reads no PKCS#8 private key).
    write_private(
        &pki.service_account_public_key,
        &service_account.public_key_pem(),
    )?;
    // --token-auth-file: token,user,uid,"group1,group2"
    write_private(
        &pki.token_file,
        &format!(
            "{},{ADMIN_USER}-token,{ADMIN_USER}-token,\"{ADMIN_GROUP}\"\n",
            pki.admin_token
        ),
    )?;
    Ok(pki)
}

fn name(common_name: &str, organization: Option<&str>) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    if let Some(organization) = organization {
        dn.push(DnType::OrganizationName, organization);
    }
    dn
}

fn client(user: &str, group: Option<&str>, ca: &Issuer<'_, KeyPair>) -> Result<ClientIdentity> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name = name(user, group);
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    leaf(params, ca)
}

fn leaf(mut params: CertificateParams, ca: &Issuer<'_, KeyPair>) -> Result<ClientIdentity> {
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.serial_number = Some(random_serial()?);
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, ca)?;
    Ok(ClientIdentity {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

fn random_bytes(len: usize) -> Result<Vec<u8>> {
    let mut bytes = vec![0; len];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(Error::io("reading /dev/urandom"))?;
    Ok(bytes)
}

fn random_serial() -> Result<SerialNumber> {
    let mut bytes = random_bytes(16)?;
    bytes[0] &= 0x7f; // positive
    bytes[0] |= 0x01; // and without a leading zero byte
    Ok(SerialNumber::from_slice(&bytes))
}

fn random_hex(len: usize) -> Result<String> {
    let mut out = String::with_capacity(len * 2);
    for byte in random_bytes(len)? {
        let _ = write!(out, "{byte:02x}");
    }
    Ok(out)
}

/// Writes a file readable by its owner only.
pub(crate) fn write_private(path: &Path, contents: &str) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(contents.as_bytes()))
        .map_err(Error::io(format!("writing {}", path.display())))
}
