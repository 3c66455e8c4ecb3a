package app

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/sqlkube/sqlkube/server/controllers"
)

// kubeAPIServerConfig is kube-apiserver's flags that sqlkube has under no name of its own, as
// given: the secure serving address (an alternative to --listen) and the flags every
// kube-apiserver command line carries (envtest's), which sqlkube accepts where it can honour
// them.
type kubeAPIServerConfig struct {
	SecurePort  int
	BindAddress net.IP
	// EtcdServers are accepted and not used: objects are kept in --db.
	EtcdServers     []string
	AllowPrivileged bool
	InsecurePort    int
}

// kube-apiserver's defaults that sqlkube takes when started under kube-apiserver's name.
const (
	kubeSecurePort = 6443
	kubeCertDir    = "/var/run/kubernetes"
	// kubeDatabaseFile is the SQLite file, in --cert-dir, of a server started as kube-apiserver
	// without --db: a fresh directory (envtest's) is a fresh server.
	kubeDatabaseFile = "sqlkube.db"
)

func addKubeAPIServerFlags(fs *pflag.FlagSet, c *kubeAPIServerConfig) {
	fs.IntVar(&c.SecurePort, "secure-port", kubeSecurePort,
		"kube-apiserver's: port to serve HTTPS on, with --bind-address; instead of --listen (the default when started as kube-apiserver)")
	fs.IPVar(&c.BindAddress, "bind-address", net.IPv4zero,
		"kube-apiserver's: IP address to serve on with --secure-port; instead of --listen")
	fs.StringSliceVar(&c.EtcdServers, "etcd-servers", nil,
		"kube-apiserver's: accepted and not used; objects are kept in --db (when started as kube-apiserver, by default in "+kubeDatabaseFile+" in --cert-dir)")
	fs.BoolVar(&c.AllowPrivileged, "allow-privileged", true,
		"kube-apiserver's: sqlkube admits pods with privileged containers; false is refused, as sqlkube does not check for them")
	// kube-apiserver dropped --insecure-port in 1.24 after years of accepting only 0; envtests
	// older than that pass --insecure-port=0 unconditionally. Hidden, so that newer envtests,
	// which look for it in --help, do not pass it.
	fs.IntVar(&c.InsecurePort, "insecure-port", 0, "removed from kube-apiserver in 1.24: only 0 (no insecure serving) is accepted")
	_ = fs.MarkHidden("insecure-port")
}

// apply checks kube-apiserver's flags and carries them into cfg: --bind-address and
// --secure-port into the listen address and, for a server started as kube-apiserver (asKube),
// kube-apiserver's defaults: serving on 0.0.0.0:6443, the database in --cert-dir (by default
// kube's /var/run/kubernetes), no admin kubeconfig, none of kube-controller-manager's
// controllers, and its certificate handling.
func (k kubeAPIServerConfig) apply(fs *pflag.FlagSet, cfg *Config, asKube bool) error {
	if k.InsecurePort != 0 {
		return fmt.Errorf("--insecure-port: %d: sqlkube serves no insecure port, only 0 is accepted", k.InsecurePort)
	}
	if !k.AllowPrivileged {
		return errors.New("--allow-privileged=false is not supported: sqlkube does not check pods for privileged containers")
	}
	securePort := fs.Changed("secure-port") || fs.Changed("bind-address")
	if securePort && fs.Changed("listen") {
		return errors.New("--listen and --secure-port/--bind-address both set the serving address: give one")
	}
	if securePort || asKube && !fs.Changed("listen") {
		if k.SecurePort < 1 || k.SecurePort > 65535 {
			return fmt.Errorf("--secure-port %d must be between 1 and 65535, inclusive. It cannot be turned off with 0", k.SecurePort)
		}
		cfg.Listen = net.JoinHostPort(k.BindAddress.String(), strconv.Itoa(k.SecurePort))
	}
	if !asKube {
		return nil
	}
	sec := &cfg.Security
	sec.KubeCertificates = true
	if sec.CertDir == "" {
		sec.CertDir = kubeCertDir
	}
	if !fs.Changed("db") {
		cfg.DSN = "sqlite://" + filepath.Join(sec.CertDir, kubeDatabaseFile)
	}
	if !fs.Changed("admin-kubeconfig") {
		sec.AdminKubeconfig = "-"
	}
	if !fs.Changed("controllers") {
		// kube-apiserver runs none of kube-controller-manager's controllers: under envtest a
		// deleted namespace stays Terminating, its objects are not collected, and a test that
		// finalizes a namespace itself finds it as it left it.
		cfg.Controllers = controllers.Selection{"-*"}
	}
	return nil
}

// prepareKubeAPIServer creates --cert-dir for a server started as kube-apiserver, which keeps
// its database there (kube-apiserver creates it too, for its self-signed certificate), and says
// that --etcd-servers is not used.
func (cfg Config) prepareKubeAPIServer(log *slog.Logger) error {
	if etcd := cfg.KubeAPIServer.EtcdServers; len(etcd) > 0 {
		log.Info("objects are kept in the --db database, not in --etcd-servers", "etcd-servers", etcd)
	}
	if !cfg.Security.KubeCertificates {
		return nil
	}
	if err := os.MkdirAll(cfg.Security.CertDir, 0o700); err != nil {
		return fmt.Errorf("--cert-dir: %w", err)
	}
	return nil
}
