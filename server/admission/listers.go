package admission

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core"
	"k8s.io/client-go/informers/internalinterfaces"
	networkinginformers "k8s.io/client-go/informers/networking"
	nodeinformers "k8s.io/client-go/informers/node"
	schedulinginformers "k8s.io/client-go/informers/scheduling"
	storageinformers "k8s.io/client-go/informers/storage"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	"github.com/sqlkube/sqlkube/server/catalog"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/server/registry/storedobj"
	"github.com/sqlkube/sqlkube/server/resource"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// registryObjects reads the objects kube's admission plugins look up through the registry,
// as a list of them would, rather than from informers' caches: a plugin then sees every write
// that returned before its request, and a type that is not served has no objects.
type registryObjects struct {
	types   *catalog.Catalog
	objects *registry.Registry // set by Chain.ReadFrom; nil reads nothing
	log     *slog.Logger
}

// resourceQuotasStorageName is where ResourceQuotas are stored, which the chain follows.
const resourceQuotasStorageName = "resourcequotas"

// informers is the informer factory kube's plugins get: the informers of the groups the
// built-in plugins look objects up in (core, storage, node, scheduling, networking) read the
// registry and are always synced; the others, the policies' and webhooks' configuration which
// they follow by events, are shared's.
func (o *registryObjects) informers(shared informers.SharedInformerFactory) informers.SharedInformerFactory {
	return registryInformers{SharedInformerFactory: shared, o: o}
}

type registryInformers struct {
	informers.SharedInformerFactory
	o *registryObjects
}

// InformerFor is the informer of obj's type (a *corev1.Node) on the registry: the typed
// informers of the groups below ask for theirs here.
func (f registryInformers) InformerFor(obj runtime.Object, _ internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	return registryInformer{indexer: registryIndexer{o: f.o, example: obj}}
}

func (f registryInformers) Core() coreinformers.Interface {
	return coreinformers.New(f, metav1.NamespaceAll, nil)
}

func (f registryInformers) Storage() storageinformers.Interface {
	return storageinformers.New(f, metav1.NamespaceAll, nil)
}

func (f registryInformers) Node() nodeinformers.Interface {
	return nodeinformers.New(f, metav1.NamespaceAll, nil)
}

func (f registryInformers) Scheduling() schedulinginformers.Interface {
	return schedulinginformers.New(f, metav1.NamespaceAll, nil)
}

func (f registryInformers) Networking() networkinginformers.Interface {
	return networkinginformers.New(f, metav1.NamespaceAll, nil)
}

// registryInformer is an informer whose store is the registry: always synced. It delivers no
// events; the plugins given one only read through its lister.
type registryInformer struct {
	cache.SharedIndexInformer
	indexer registryIndexer
}

func (i registryInformer) GetIndexer() cache.Indexer { return i.indexer }
func (i registryInformer) GetStore() cache.Store     { return i.indexer }
func (registryInformer) HasSynced() bool             { return true }

// registryIndexer reads the stored objects of example's type, decoded as that type, as the
// listers read an informer's store: every object (List), a namespace's (Index by namespace),
// one by key. A list that fails reads as empty (a store's List has no error; the plugins that
// list, LimitRanger and ResourceQuota, then look the objects up through the loopback client).
type registryIndexer struct {
	cache.Indexer // only the reads below are implemented
	o             *registryObjects
	example       runtime.Object
}

// resource is where example's type is stored; false if it is not served.
func (i registryIndexer) resource() (*resource.Resource, bool) {
	kinds, _, err := clientscheme.Scheme.ObjectKinds(i.example)
	if err != nil || i.o.objects == nil {
		return nil, false
	}
	return i.o.types.ResourceForKind(kinds[0].GroupVersion().String(), kinds[0].Kind)
}

func (i registryIndexer) List() []any {
	items, err := i.list(metav1.NamespaceAll)
	if err != nil {
		i.o.log.Warn("admission: listing objects a plugin looks up", "type", fmt.Sprintf("%T", i.example), "err", err)
	}
	return items
}

func (i registryIndexer) Index(indexName string, obj any) ([]any, error) {
	if indexName != cache.NamespaceIndex {
		return nil, fmt.Errorf("index %q is not served by the registry", indexName)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	return i.list(m.GetNamespace())
}

func (i registryIndexer) list(namespace string) ([]any, error) {
	res, ok := i.resource()
	if !ok {
		return nil, nil
	}
	var items []any
	_, err := i.o.objects.List(context.Background(), registry.Ref{Resource: res, Namespace: namespace}, &internalversion.ListOptions{}, func(o sqlstore.Object) error {
		item, err := i.decode(o.Value)
		items = append(items, item)
		return err
	})
	return items, err
}

func (i registryIndexer) GetByKey(key string) (any, bool, error) {
	res, ok := i.resource()
	if !ok {
		return nil, false, nil
	}
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, false, err
	}
	stored, err := i.o.objects.Get(context.Background(), registry.Ref{Resource: res, Namespace: namespace, Name: name}, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	item, err := i.decode(stored.Value)
	return item, err == nil, err
}

// decode is a stored object as example's type.
func (i registryIndexer) decode(value []byte) (runtime.Object, error) {
	item := reflect.New(reflect.TypeOf(i.example).Elem()).Interface().(runtime.Object)
	return item, storedobj.UnmarshalStored(value, item)
}
