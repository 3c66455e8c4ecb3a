package app

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/sqlkube/sqlkube/dialects/sqlite"
	"github.com/sqlkube/sqlkube/server/auth"
	"github.com/sqlkube/sqlkube/server/pki"
)

// securityConfig is how sqlkube secures its API: TLS, authentication and authorization, with
// kube-apiserver's flag names where kube-apiserver has the flag.
type securityConfig struct {
	PlainHTTP            bool
	CertDir              string
	TLSCertFile          string
	TLSKeyFile           string
	TLSSANs              []string
	TLSMinVersion        string
	TLSCipherSuites      []string
	ClientCAFile         string
	AdminKubeconfig      string
	AnonymousAuth        bool
	TokenAuthFile        string
	AuthenticationConfig string
	AuthorizationModes   []string
	APIAudiences         []string
	SAIssuer             string
	SAKeyFiles           []string
	SASigningKeyFile     string
	SAJWKSURI            string
	SAMaxExpiration      time.Duration
	// KubeCertificates is kube-apiserver's handling of certificates, for a server started as
	// kube-apiserver: the serving pair is --tls-cert-file or apiserver.crt and apiserver.key in
	// --cert-dir (self-signed when missing), client certificates are verified only with
	// --client-ca-file, and no CA or ServiceAccount key is generated.
	KubeCertificates bool
}

func addSecurityFlags(fs *pflag.FlagSet, c *securityConfig) {
	fs.BoolVar(&c.PlainHTTP, "plain-http", false,
		"DEVELOPMENT ONLY: serve plain HTTP and treat every request as an admin (system:masters)")
	fs.StringVar(&c.CertDir, "cert-dir", "",
		"directory of the generated CA, serving certificate and ServiceAccount signing key (default: sqlkube-pki beside the SQLite file; required for PostgreSQL unless --tls-cert-file, --tls-private-key-file and --client-ca-file are given); "+
			"started as kube-apiserver, kube's: apiserver.crt and apiserver.key, self-signed when missing, and the SQLite database (default "+kubeCertDir+")")
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", "",
		"serving certificate (PEM, may include intermediates); reloaded when it changes (default: generated in --cert-dir)")
	fs.StringVar(&c.TLSKeyFile, "tls-private-key-file", "", "private key of --tls-cert-file (PEM)")
	fs.StringSliceVar(&c.TLSSANs, "tls-san", nil,
		"extra host names or IP addresses of the generated serving certificate (localhost, 127.0.0.1, ::1, the host name and the listen address are always included)")
	fs.StringVar(&c.TLSMinVersion, "tls-min-version", "VersionTLS12",
		"lowest TLS version served: "+strings.Join(cliflag.TLSPossibleVersions(), ", "))
	fs.StringSliceVar(&c.TLSCipherSuites, "tls-cipher-suites", nil,
		"TLS 1.2 cipher suites served (default: Go's secure suites); possible values: "+strings.Join(cliflag.PreferredTLSCipherNames(), ", "))
	fs.StringVar(&c.ClientCAFile, "client-ca-file", "",
		"CA bundle that signs client certificates: a certificate's CN is the user, its O the groups; reloaded when it changes (default: the generated CA)")
	fs.StringVar(&c.AdminKubeconfig, "admin-kubeconfig", "",
		"where to write a kubeconfig with a system:masters client certificate (default: sqlkube.kubeconfig beside the SQLite file, admin.kubeconfig in --cert-dir for PostgreSQL; \"-\" writes none)")
	fs.BoolVar(&c.AnonymousAuth, "anonymous-auth", true,
		"let requests without credentials in as system:anonymous (group system:unauthenticated), which RBAC allows only the health and version paths")
	fs.StringVar(&c.TokenAuthFile, "token-auth-file", "",
		"static bearer tokens, kube's CSV format: token,user,uid,\"group1,group2\"")
	fs.StringVar(&c.AuthenticationConfig, "authentication-config", "",
		"kube's AuthenticationConfiguration file (apiserver.config.k8s.io): JWT/OIDC issuers with claim mappings and validation rules")
	fs.StringSliceVar(&c.AuthorizationModes, "authorization-mode", []string{auth.ModeRBAC},
		"authorizers, in order: "+strings.Join(auth.Modes, ", ")+" (members of system:masters are always allowed)")
	fs.StringSliceVar(&c.APIAudiences, "api-audiences", nil,
		"audiences a bearer token must be meant for (default: the ServiceAccount issuer)")
	fs.StringVar(&c.SAIssuer, "service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"issuer (iss claim) of ServiceAccount tokens, and of the discovery document at /.well-known/openid-configuration")
	fs.StringVar(&c.SASigningKeyFile, "service-account-signing-key-file", "",
		"private key (PEM) that signs ServiceAccount tokens (default: sa.key in --cert-dir, generated on first start)")
	fs.StringSliceVar(&c.SAKeyFiles, "service-account-key-file", nil,
		"public or private keys (PEM) that verify ServiceAccount tokens; repeatable (default: the signing key)")
	fs.StringVar(&c.SAJWKSURI, "service-account-jwks-uri", "",
		"URL of the token key set in the discovery document (default: the issuer's /openid/v1/jwks)")
	fs.DurationVar(&c.SAMaxExpiration, "service-account-max-token-expiration", 0,
		"longest lifetime a TokenRequest may ask for; longer requests are shortened to it (0: no limit)")
}

// DefaultDSN is the database a server keeps its objects in without --db.
const DefaultDSN = "sqlite://./sqlkube.db"

// DefaultCertDir is a server's --cert-dir when unset: sqlkube-pki beside the SQLite file; ""
// (none) on PostgreSQL.
func DefaultCertDir(dsn string) string {
	if dir := sqliteDir(dsn); dir != "" {
		return filepath.Join(dir, "sqlkube-pki")
	}
	return ""
}

// DefaultAdminKubeconfig is a server's --admin-kubeconfig when unset, given its certificate
// directory: sqlkube.kubeconfig beside the SQLite file, admin.kubeconfig in certDir on
// PostgreSQL, "" (none) without a certificate directory.
func DefaultAdminKubeconfig(dsn, certDir string) string {
	switch {
	case sqliteDir(dsn) != "":
		return filepath.Join(sqliteDir(dsn), "sqlkube.kubeconfig")
	case certDir != "":
		return filepath.Join(certDir, "admin.kubeconfig")
	}
	return ""
}

// sqliteDir is the directory of the SQLite file a DSN names, or "" if the DSN is not SQLite.
func sqliteDir(dsn string) string {
	if path := sqlitePath(dsn); path != "" {
		return filepath.Dir(path)
	}
	return ""
}

// sqlitePath is the SQLite file a DSN names, or "" if the DSN names none.
func sqlitePath(dsn string) string {
	path, err := sqlite.Path(dsn)
	if err != nil {
		return ""
	}
	return path
}

func isPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// resolve fills the defaults that depend on the database and checks the flags fit together.
func (c *securityConfig) resolve(dsn string) error {
	if c.PlainHTTP {
		return nil
	}
	for _, mode := range c.AuthorizationModes {
		if !slices.Contains(auth.Modes, mode) {
			return fmt.Errorf("--authorization-mode: unknown authorization mode %q (known: %s)", mode, strings.Join(auth.Modes, ", "))
		}
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return errors.New("--tls-cert-file and --tls-private-key-file go together")
	}
	if c.CertDir == "" {
		c.CertDir = DefaultCertDir(dsn)
	}
	if c.CertDir == "" && isPostgres(dsn) && (c.TLSCertFile == "" || c.ClientCAFile == "") {
		return errors.New("--cert-dir is required on PostgreSQL unless --tls-cert-file, --tls-private-key-file and --client-ca-file are given: replicas sharing the database must share one CA (give them the same directory)")
	}
	if c.AdminKubeconfig == "" {
		c.AdminKubeconfig = DefaultAdminKubeconfig(dsn, c.CertDir)
	}
	if c.SASigningKeyFile == "" && c.CertDir != "" && !c.KubeCertificates {
		c.SASigningKeyFile = filepath.Join(c.CertDir, pki.ServiceAccountKeyFile)
	}
	if c.AdminKubeconfig == "-" {
		c.AdminKubeconfig = ""
	}
	return nil
}

// servingHosts are the names the generated serving certificate covers: the local names, this
// host's name, the listen address and the operator's extra names.
func servingHosts(listen net.Addr, extra []string) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if name, err := os.Hostname(); err == nil {
		hosts = append(hosts, name)
	}
	if tcp, ok := listen.(*net.TCPAddr); ok && !tcp.IP.IsUnspecified() {
		hosts = append(hosts, tcp.IP.String())
	}
	return append(hosts, extra...)
}

// serverURL is the URL a client on this host reaches the API at.
func serverURL(listen net.Addr) string {
	tcp, ok := listen.(*net.TCPAddr)
	if !ok {
		return "https://" + listen.String()
	}
	host := tcp.IP.String()
	if tcp.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return fmt.Sprintf("https://%s", net.JoinHostPort(host, fmt.Sprint(tcp.Port)))
}
