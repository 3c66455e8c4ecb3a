package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/sqlkube/sqlkube/dialects"
	"github.com/sqlkube/sqlkube/dialects/sqlite"
	"github.com/sqlkube/sqlkube/server/apiserver"
	"github.com/sqlkube/sqlkube/server/app/encryption"
	"github.com/sqlkube/sqlkube/server/endpoints"
	"github.com/sqlkube/sqlkube/server/metrics"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// shutdownGrace bounds how long a stopping server waits for in-flight requests.
const shutdownGrace = 30 * time.Second

// Run listens on cfg.Listen and serves the API there until ctx ends (see Serve).
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	// Listen before opening the database so that a taken port fails fast, before migrations.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	if err := cfg.prepareKubeAPIServer(log); err != nil {
		return err
	}
	return Serve(ctx, ln, cfg, log)
}

// Serve runs the API on ln (cfg.Listen is not used) until ctx ends, then shuts down gracefully:
// it stops accepting, lets in-flight requests finish (ending watches), closes ln and the store.
func Serve(ctx context.Context, ln net.Listener, cfg Config, log *slog.Logger) error {
	defer ln.Close()
	var err error
	storeOpts := storeOptions(cfg, log)
	// Without a configuration, values stay as written, and one an earlier configuration
	// encrypted is answered as kube-apiserver answers it.
	storeOpts.Transformer = encryption.Unconfigured()
	if path := cfg.Operations.EncryptionProviderConfig; path != "" {
		if storeOpts.Transformer, err = encryption.Load(ctx, path); err != nil {
			return fmt.Errorf("--encryption-provider-config: %w", err)
		}
	}
	db, err := Database(cfg.DSN)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	store, err := sqlstore.Open(ctx, db, storeOpts)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	unlock, err := lockSQLiteFile(cfg.DSN)
	if err != nil {
		closeStore(store, log)
		return err
	}
	defer func() { closeStore(store, log); unlock() }()
	// The server's parts (controllers, informers, the loopback client, certificate reloads) run
	// until it has stopped serving, not until ctx ends: its shutdown hooks (the kubernetes
	// Service's endpoints removed through the loopback client) and the requests in flight still
	// need them, as kube-apiserver stops them after its HTTP server. They stop before the store
	// closes.
	running, stopRunning := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRunning()
	secure, err := prepareSecurity(running, cfg.Security, ln.Addr(), log)
	if err != nil {
		return err
	}

	ops := cfg.Operations
	opts := apiserver.Options{WatchBookmarkInterval: cfg.WatchBookmarkInterval, Admission: cfg.Admission, Controllers: cfg.Controllers,
		Options: endpoints.Options{Logger: log, Limits: &ops.Limits, RequestLogLevel: ops.RequestLogLevel, Profiling: ops.Profiling},
		Started: releaseStartMemory}
	if opts.Services, err = cfg.Services.options(ln.Addr(), log); err != nil {
		return err
	}
	if secure != nil {
		if opts.Security, err = secure.options(running, cfg.Security); err != nil {
			return err
		}
		opts.Services.ClientCA = secure.mintingCA
	}
	if opts.Audit, err = cfg.Audit.audit(); err != nil {
		return err
	}
	if opts.Audit.Backend != nil {
		defer runAuditBackend(opts.Audit.Backend)()
	}
	api, err := apiserver.New(running, store, opts)
	if err != nil {
		return fmt.Errorf("start API server: %w", err)
	}
	return serveUntilDone(ctx, ln, api, secure, ops.ShutdownDelayDuration, log)
}

// Database is the database a DSN (--db) names, in the dialect its scheme picks (dialects.Parse):
// "sqlite://PATH" (sqlite.Path), "postgres://..." or "postgresql://...". A DSN that names none
// is an error that says what is accepted.
func Database(dsn string) (sqlstore.Database, error) {
	name, err := dialects.Parse(dsn)
	if err != nil {
		return sqlstore.Database{}, err
	}
	if name == dialects.Postgres {
		return sqlstore.Postgres(dsn), nil
	}
	path, err := sqlite.Path(dsn)
	if err != nil {
		return sqlstore.Database{}, err
	}
	return sqlstore.SQLite(path), nil
}

func storeOptions(cfg Config, log *slog.Logger) sqlstore.Options {
	return sqlstore.Options{
		Logger:                log,
		MaxConns:              cfg.DBMaxConns,
		Retention:             cfg.Retention,
		RetentionMinRevisions: cfg.RetentionMinRevisions,
		CompactionInterval:    cfg.CompactionInterval,
		Mark:                  apiserver.StoreMark,
		Observer:              metrics.Observer{},
	}
}

func closeStore(store *sqlstore.Store, log *slog.Logger) {
	if err := store.Close(); err != nil {
		log.Error("closing the database", "err", err)
	}
}

// serveUntilDone serves HTTP on ln until ctx ends or serving fails. When ctx ends, the server
// keeps serving for shutdownDelay with /readyz failing, so that load balancers take it out of
// rotation before it stops accepting.
func serveUntilDone(ctx context.Context, ln net.Listener, api *endpoints.Server, secure *secureServing, shutdownDelay time.Duration, log *slog.Logger) error {
	stopping, stopStreams := context.WithCancel(context.Background())
	defer stopStreams()
	srv := &http.Server{
		Handler: endStreamsOnShutdown(api, stopping),
		// A client must send its headers promptly and may keep an idle connection only so long,
		// so that slow or silent clients cannot hold connections (slowloris); a request's
		// body and answer are bounded by --request-timeout and the watch's write deadlines.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	scheme := "http"
	if secure == nil {
		go func() { served <- srv.Serve(ln) }()
	} else {
		scheme, srv.TLSConfig = "https", secure.tls
		go func() { served <- srv.ServeTLS(ln, "", "") }()
	}
	log.Info("serving", "addr", ln.Addr().String(), "scheme", scheme)

	select {
	case err := <-served:
		return fmt.Errorf("serve HTTP: %w", err)
	case <-ctx.Done():
	}
	if shutdownDelay > 0 {
		log.Info("shutting down: failing readiness, still serving", "delay", shutdownDelay)
		api.BeginShutdown()
		select {
		case err := <-served:
			return fmt.Errorf("serve HTTP: %w", err)
		case <-time.After(shutdownDelay):
		}
	}
	log.Info("shutting down")
	api.BeginShutdown()
	stopStreams()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("in-flight requests did not finish within %s: %w", shutdownGrace, err)
	}
	return nil
}

// endStreamsOnShutdown ends long-running requests (watches) when stopping ends. Shutdown waits
// for every request to finish, and a watch only finishes when its context ends; ordinary requests
// keep their own context so they complete normally.
func endStreamsOnShutdown(next http.Handler, stopping context.Context) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !endpoints.IsWatch(r) {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(stopping, cancel)
		defer stop()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
