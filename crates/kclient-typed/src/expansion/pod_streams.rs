//! Exec, attach and port-forward on a pod (the `streaming` feature; kclient-streaming's
//! `remotecommand` and `portforward` addressed at `pods/{name}/{exec,attach,portforward}`,
//! as client-go builds them with `RESTClient().Post()…SubResource("exec")` and kube-rs
//! offers them on `Api<Pod>`).

use k8s_openapi::api::core::v1::Pod;
use kclient_core::GroupResource;
use kclient_rest::RefusedRequest;
use kclient_streaming::portforward::{Dialer, ForwardedPort, PortForward, PortForwarder};
use kclient_streaming::remotecommand::{AttachOptions, ExecOptions, Executor};

use crate::client::ResourceClient;
use crate::error::Error;

impl ResourceClient<Pod> {
    /// The namespace and the checked name of a pod this client addresses.
    fn pod_target<'a>(
        &'a self,
        verb: &'static str,
        name: &'a str,
    ) -> Result<(&'a str, &'a str), Error> {
        let namespace = self
            .namespace()
            .ok_or_else(|| RefusedRequest::NamespaceRequired {
                verb,
                resource: GroupResource::new("", "pods"),
            })?;
        if name.is_empty() {
            return Err(RefusedRequest::MissingName { verb }.into());
        }
        Ok((namespace, name))
    }

    /// Runs a command in a container of pod `name`: an [`Executor`] whose
    /// [`stream`](Executor::stream) runs it with local streams and whose
    /// [`output`](Executor::output) collects its output and exit code.
    ///
    /// ```no_run
    /// # async fn run(clientset: kclient_typed::Clientset) -> Result<(), Box<dyn std::error::Error>> {
    /// use kclient_streaming::remotecommand::ExecOptions;
    ///
    /// let options = ExecOptions::command(["sh", "-c", "hostname"]).stdout().stderr();
    /// let output = clientset.core_v1().pods("default").exec("web", &options)?.output(None).await?;
    /// println!("{} (exit {})", String::from_utf8_lossy(&output.stdout), output.exit_code);
    /// # Ok(()) }
    /// ```
    pub fn exec(&self, name: &str, options: &ExecOptions) -> Result<Executor, Error> {
        let (namespace, name) = self.pod_target("exec", name)?;
        Ok(Executor::exec(self.rest_client(), namespace, name, options))
    }

    /// Attaches to a container of pod `name` (its main process's streams).
    pub fn attach(&self, name: &str, options: &AttachOptions) -> Result<Executor, Error> {
        let (namespace, name) = self.pod_target("attach", name)?;
        Ok(Executor::attach(
            self.rest_client(),
            namespace,
            name,
            options,
        ))
    }

    /// A dialer of port-forward connections to pod `name`: `dial().await?.connect(port)` is
    /// one forwarded connection (an `AsyncRead + AsyncWrite`), without a local listener.
    pub fn port_forward_dialer(&self, name: &str) -> Result<Dialer, Error> {
        let (namespace, name) = self.pod_target("portforward", name)?;
        Ok(Dialer::for_pod(self.rest_client(), namespace, name))
    }

    /// A forwarder of local ports to pod `name`'s ports (kubectl's specifications: `8080`,
    /// `8888:80`, `:80` for any free local port), listening on `localhost`.
    pub fn port_forwarder(&self, name: &str, ports: &[&str]) -> Result<PortForwarder, Error> {
        Ok(PortForwarder::new(self.port_forward_dialer(name)?, ports)?)
    }

    /// Forwards local port `local` (0: any free port) to port `remote` of pod `name`, and
    /// returns the running forward once it listens: [`PortForward::local_addr`] is where
    /// to connect.
    ///
    /// ```no_run
    /// # async fn run(clientset: kclient_typed::Clientset) -> Result<(), Box<dyn std::error::Error>> {
    /// let forward = clientset.core_v1().pods("default").forward("web", 0, 80).await?;
    /// let address = forward.local_addr(80).unwrap();
    /// let _conn = tokio::net::TcpStream::connect(address).await?;
    /// forward.stop().await?;
    /// # Ok(()) }
    /// ```
    pub async fn forward(&self, name: &str, local: u16, remote: u16) -> Result<PortForward, Error> {
        let forwarder = PortForwarder::with_ports(
            self.port_forward_dialer(name)?,
            vec![ForwardedPort::new(local, remote)],
        )?;
        Ok(forwarder.start().await?)
    }
}
