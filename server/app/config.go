// Package app is the sqlkube server command as a library: its flags and environment variables
// (Parse), and serving the API with them over TLS until the context ends (Serve). cmd/sqlkube
// and server/testserver both run the server through it, so that a test server is assembled as
// the binary is.
package app

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/sqlkube/sqlkube/server/admission"
	"github.com/sqlkube/sqlkube/server/controllers"
)

// envPrefix starts the environment variable that sets each flag: --db-max-conns is
// SQLKUBE_DB_MAX_CONNS.
const envPrefix = "SQLKUBE_"

// Config is everything the server command reads from flags and the environment.
type Config struct {
	Listen                string
	DSN                   string
	LogLevel              slog.Level
	DBMaxConns            int
	Retention             time.Duration
	RetentionMinRevisions int64
	CompactionInterval    time.Duration
	WatchBookmarkInterval time.Duration
	Security              securityConfig
	Audit                 auditConfig
	Operations            operationsConfig
	Admission             admission.Options
	Services              servicesConfig
	KubeAPIServer         kubeAPIServerConfig
	// Controllers are which of kube-controller-manager's controllers the server runs itself.
	Controllers controllers.Selection
	// Version asks for the version instead of serving.
	Version bool
}

// serveFlags declares the server's flags on a new FlagSet, bound to cfg.
func serveFlags(cfg *Config) *pflag.FlagSet {
	fs := pflag.NewFlagSet("sqlkube", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:8080",
		"address to serve the Kubernetes API on, over HTTPS unless --plain-http (host:port; :0 picks a free port)")
	fs.StringVar(&cfg.DSN, "db", DefaultDSN,
		"database to keep objects in: sqlite://PATH, or postgres://USER@HOST:PORT/DB?sslmode=disable (postgresql:// also works)")
	fs.Var((*levelValue)(&cfg.LogLevel), "log-level", "least severe log level written to stderr: debug, info, warn or error")
	fs.IntVar(&cfg.DBMaxConns, "db-max-conns", 0,
		"most database connections to keep open (PostgreSQL); 0 picks a default")
	fs.DurationVar(&cfg.Retention, "retention", 5*time.Minute,
		"how long history is kept for watches and paginated lists to resume from; older revisions answer 410 Gone")
	fs.Int64Var(&cfg.RetentionMinRevisions, "retention-min-revisions", 1000,
		"fewest recent revisions kept whatever their age")
	fs.DurationVar(&cfg.CompactionInterval, "compaction-interval", 0,
		"how often old history is discarded; 0 derives it from --retention")
	fs.DurationVar(&cfg.WatchBookmarkInterval, "watch-bookmark-interval", time.Minute,
		"how often a watch that allows bookmarks receives one")
	addSecurityFlags(fs, &cfg.Security)
	addAuditFlags(fs, &cfg.Audit)
	addOperationsFlags(fs, &cfg.Operations)
	addAdmissionFlags(fs, &cfg.Admission)
	addServicesFlags(fs, &cfg.Services)
	addKubeAPIServerFlags(fs, &cfg.KubeAPIServer)
	fs.StringSliceVar((*[]string)(&cfg.Controllers), "controllers", []string{"*"}, fmt.Sprintf(
		"which of kube-controller-manager's controllers sqlkube runs itself, with kube-controller-manager's --controllers syntax: "+
			"'*' runs all, 'foo' runs the one named foo, '-foo' leaves foo out (to an external kube-controller-manager); "+
			"sqlkube runs %s", strings.Join(controllers.KubeControllerManagers, ", ")))
	fs.BoolVar(&cfg.Version, "version", false, "print the version and exit")
	return fs
}

// EnvName is the environment variable that sets the flag named flag: SQLKUBE_ and the name in
// upper case, dashes as underscores.
func EnvName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// ApplyEnv sets every flag of fs that has its environment variable (EnvName) in env. Call it
// before parsing the command line, so that a flag given there wins.
func ApplyEnv(fs *pflag.FlagSet, env []string) error {
	values := envMap(env)
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		name := EnvName(f.Name)
		v, ok := values[name]
		if !ok || err != nil {
			return
		}
		if setErr := fs.Set(f.Name, v); setErr != nil {
			err = fmt.Errorf("invalid value %q for %s: %w", v, name, setErr)
		}
	})
	return err
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// Parse reads the server's configuration from env, then args. --help prints the usage to
// helpOut and returns pflag.ErrHelp; other errors are left to the caller to report.
func Parse(args, env []string, helpOut io.Writer) (Config, error) {
	return parse(args, env, helpOut, false)
}

// ParseKubeAPIServer is Parse for a server started as kube-apiserver (envtest's
// KUBEBUILDER_ASSETS): the same flags, with kube-apiserver's defaults where sqlkube's differ
// (kubeAPIServerConfig.apply).
func ParseKubeAPIServer(args, env []string, helpOut io.Writer) (Config, error) {
	return parse(args, env, helpOut, true)
}

func parse(args, env []string, helpOut io.Writer, asKube bool) (Config, error) {
	var cfg Config
	fs := serveFlags(&cfg)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := ApplyEnv(fs, env); err != nil {
		return cfg, err
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			printServeUsage(helpOut, fs)
		}
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.Version {
		return cfg, nil
	}
	if err := cfg.KubeAPIServer.apply(fs, &cfg, asKube); err != nil {
		return cfg, err
	}
	if err := checkAdmission(cfg.Admission); err != nil {
		return cfg, err
	}
	if err := cfg.Controllers.Validate(); err != nil {
		return cfg, fmt.Errorf("--controllers: %w", err)
	}
	return cfg, cfg.Security.resolve(cfg.DSN)
}

func printServeUsage(w io.Writer, fs *pflag.FlagSet) {
	fmt.Fprintf(w, `sqlkube serves the Kubernetes API for storing and watching objects, kept in SQLite or PostgreSQL.

Usage:
  sqlkube [flags]        serve the API
  sqlkube version        print the version (also sqlkube --version)
  sqlkube help           print this help (also sqlkube --help)
  sqlkube kubeconfig     mint a client-certificate kubeconfig (see sqlkube kubeconfig --help)
  sqlkube bench [flags]  load-test a running server (see sqlkube bench --help)
  sqlkube snapshot       save, restore and check snapshots (see sqlkube snapshot --help)
  sqlkube compact        discard all history now and rewrite the database (see sqlkube compact --help)

Every flag can also be set with an environment variable: %s<FLAG>, upper case, dashes
as underscores (--db-max-conns is %s). A flag on the command line wins.

Flags:
%s`, envPrefix, EnvName("db-max-conns"), fs.FlagUsages())
}

// levelValue lets a slog.Level be a flag that accepts debug, info, warn and error.
type levelValue slog.Level

func (l *levelValue) String() string { return strings.ToLower(slog.Level(*l).String()) }

func (l *levelValue) Type() string { return "level" }

func (l *levelValue) Set(s string) error {
	switch strings.ToLower(s) {
	case "debug":
		*l = levelValue(slog.LevelDebug)
	case "info":
		*l = levelValue(slog.LevelInfo)
	case "warn", "warning":
		*l = levelValue(slog.LevelWarn)
	case "error":
		*l = levelValue(slog.LevelError)
	default:
		return fmt.Errorf("unknown log level %q (want debug, info, warn or error)", s)
	}
	return nil
}
