package services

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"k8s.io/apiserver/pkg/storage"
	"k8s.io/kubernetes/pkg/controlplane/reconcilers"

	"github.com/sqlkube/sqlkube/sqlstore"
)

// masterLeasesResource is where the replicas' leases are kept: outside every served resource,
// as kube-apiserver keeps them in etcd under /masterleases/.
const masterLeasesResource = "masterleases"

// leaseTTL is how long a replica's lease lasts without renewal: kube-apiserver's
// DefaultEndpointReconcilerTTL. Replicas renew theirs every endpointInterval.
const leaseTTL = 15 * time.Second

// storedLeases are kube's master leases (reconcilers.Leases) kept in the database: one object
// per advertised address, holding when it expires. kube-apiserver keeps them in etcd with a TTL
// and its lease endpoint reconciler lists every live one in the kubernetes Service's endpoints;
// here a lease past its expiry is treated as gone (and deleted by the next replica to list it).
// Expiry is judged by each replica's clock, so replicas' clocks must agree to within the TTL.
type storedLeases struct {
	ctx   context.Context
	store Storage
	now   func() time.Time
	// ca identifies the CA this replica mints client certificates with ("" for none), recorded
	// in its lease so that a replica starting with another one is refused (CheckSharedCA).
	ca string
}

var _ reconcilers.Leases = (*storedLeases)(nil)

// leaseRecord is a lease's stored value.
type leaseRecord struct {
	IP      string    `json:"ip"`
	Expires time.Time `json:"expires"`
	CA      string    `json:"ca,omitempty"`
}

// ListLeases answers the addresses whose leases have not expired, deleting the others.
func (l *storedLeases) ListLeases() ([]string, error) {
	live, err := l.live()
	if err != nil {
		return nil, err
	}
	ips := make([]string, 0, len(live))
	for _, lease := range live {
		ips = append(ips, lease.IP)
	}
	return ips, nil
}

// live reads the leases that have not expired, deleting the others.
func (l *storedLeases) live() ([]leaseRecord, error) {
	var live []leaseRecord
	var expired []sqlstore.Object
	_, err := l.store.List(l.ctx, sqlstore.ListOptions{Resource: masterLeasesResource}, func(o sqlstore.Object) error {
		var lease leaseRecord
		if err := json.Unmarshal(o.Value, &lease); err != nil || !lease.Expires.After(l.now()) {
			expired = append(expired, o)
			return nil
		}
		live = append(live, lease)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, o := range expired {
		// Another replica may have renewed or removed it meanwhile: then it is not ours to delete.
		_, _ = l.store.Write(l.ctx, sqlstore.Write{Op: sqlstore.OpDelete, Key: o.Key, ExpectedRevision: o.Revision,
			Render: func(int64) ([]byte, error) { return o.Value, nil }})
	}
	return live, nil
}

// UpdateLease creates ip's lease or extends it by leaseTTL from now.
func (l *storedLeases) UpdateLease(ip string) error {
	value, err := json.Marshal(leaseRecord{IP: ip, Expires: l.now().Add(leaseTTL), CA: l.ca})
	if err != nil {
		return err
	}
	render := func(int64) ([]byte, error) { return value, nil }
	key := leaseKey(ip)
	// Replicas advertising one address (their load balancer's) share its lease, and expired
	// leases are deleted by whoever lists them: a write that lost such a race reads again.
	for attempt := 0; ; attempt++ {
		w := sqlstore.Write{Op: sqlstore.OpCreate, Key: key, Render: render}
		current, err := l.store.Get(l.ctx, key)
		switch {
		case err == nil:
			w.Op, w.ExpectedRevision = sqlstore.OpUpdate, current.Revision
		case !errors.Is(err, sqlstore.ErrNotFound):
			return err
		}
		_, err = l.store.Write(l.ctx, w)
		lostRace := errors.Is(err, sqlstore.ErrConflict) || errors.Is(err, sqlstore.ErrExists) || errors.Is(err, sqlstore.ErrNotFound)
		if !lostRace || attempt == maxLeaseAttempts {
			return err
		}
	}
}

// maxLeaseAttempts bounds UpdateLease's retries; the reconciler renews again after
// endpointInterval anyway.
const maxLeaseAttempts = 3

// RemoveLease deletes ip's lease. A lease that is not there is a storage NotFound error, as
// etcd's is: kube's kubernetes Service controller removes its lease at start and reports stale
// data from an unclean exit only when there was one to remove.
func (l *storedLeases) RemoveLease(ip string) error {
	key := leaseKey(ip)
	current, err := l.store.Get(l.ctx, key)
	if errors.Is(err, sqlstore.ErrNotFound) {
		return storage.NewKeyNotFoundError(masterLeasesResource+"/"+ip, 0)
	}
	if err != nil {
		return err
	}
	_, err = l.store.Write(l.ctx, sqlstore.Write{Op: sqlstore.OpDelete, Key: key, ExpectedRevision: current.Revision,
		Render: func(int64) ([]byte, error) { return current.Value, nil }})
	if errors.Is(err, sqlstore.ErrNotFound) || errors.Is(err, sqlstore.ErrConflict) {
		return nil // expired and deleted by another replica meanwhile, or renewed by a newer self
	}
	return err
}

// Destroy releases nothing: the leases share the server's store.
func (l *storedLeases) Destroy() {}

func leaseKey(ip string) sqlstore.Key {
	return sqlstore.Key{Resource: masterLeasesResource, Name: ip}
}

// checkSharedCA refuses to start beside a live replica that mints client certificates with
// another CA: each would refuse the credentials the other mints (a kubeconfig, a kubelet's
// certificate). Only live replicas count, so that a database can move to a new CA once its old
// replicas have stopped; replicas starting at the same moment are not compared.
func (l *storedLeases) checkSharedCA() error {
	if l.ca == "" {
		return nil
	}
	live, err := l.live()
	if err != nil {
		return fmt.Errorf("reading the other replicas' leases: %w", err)
	}
	for _, lease := range live {
		if lease.CA != "" && lease.CA != l.ca {
			return fmt.Errorf("the replica serving this database at %s mints client certificates with another CA (SHA-256 %s; this server's is %s): "+
				"replicas sharing a database must share one --cert-dir, or the credentials each mints are refused by the others "+
				"(if that replica has stopped, its lease expires within %s)", lease.IP, lease.CA, l.ca, leaseTTL)
		}
	}
	return nil
}

// CAFingerprint identifies a CA certificate (PEM) in leases and messages: the SHA-256 of its
// first certificate's DER bytes, in hex.
func CAFingerprint(certPEM []byte) string {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return ""
	}
	sum := sha256.Sum256(block.Bytes)
	return hex.EncodeToString(sum[:])
}
