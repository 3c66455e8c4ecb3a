// Package server serves the Kubernetes REST API for storing and watching objects, on top of a
// Storage it owns the definition of.
package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/sqlkube/sqlkube/sqlstore"
)

// Storage is what the server needs from the database layer. *sqlstore.Store implements it.
type Storage interface {
	Write(ctx context.Context, w sqlstore.Write) (sqlstore.Object, error)
	Get(ctx context.Context, key sqlstore.Key) (sqlstore.Object, error)
	CurrentRevision(ctx context.Context) (int64, error)
	CompactedRevision(ctx context.Context) (int64, error)
	List(ctx context.Context, opts sqlstore.ListOptions, each func(sqlstore.Object) error) (sqlstore.ListResult, error)
	Watch(ctx context.Context, opts sqlstore.WatchOptions) (*sqlstore.Watcher, error)
	Ready(ctx context.Context) error
}

// Options configure a Server.
type Options struct {
	Logger *slog.Logger
	// WatchBookmarkInterval is how often a watch that asked for bookmarks gets one.
	WatchBookmarkInterval time.Duration
}

// Server is the HTTP API.
type Server struct {
	store    Storage
	opts     Options
	log      *slog.Logger
	registry *Registry
	handler  http.Handler
}

// New builds a Server on store. It makes sure the initial namespaces exist and loads the CRDs
// already stored, so that their types are served from the first request.
func New(ctx context.Context, store Storage, opts Options) (*Server, error) {
	panic("TODO")
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }
