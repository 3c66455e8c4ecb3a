package admission

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core"
	corev1informers "k8s.io/client-go/informers/core/v1"
	storageinformers "k8s.io/client-go/informers/storage"
	storagev1informers "k8s.io/client-go/informers/storage/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	storagev1listers "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/sqlkube/sqlkube/server/catalog"
	"github.com/sqlkube/sqlkube/server/registry"
	"github.com/sqlkube/sqlkube/sqlstore"
)

// registryObjects reads the objects kube's admission plugins look up through the registry,
// as a list of them would, rather than from informers' caches: a plugin then sees every write
// that returned before its request, and a type that is not served has no objects.
type registryObjects struct {
	types   *catalog.Catalog
	objects *registry.Registry // set by Chain.ReadFrom; nil reads nothing
}

// storageClassesStorageName and limitRangesStorageName are where the objects the plugins read
// are stored; a type not served (no StorageClasses) has none.
const (
	storageClassesStorageName = "storageclasses.storage.k8s.io"
	limitRangesStorageName    = "limitranges"
	resourceQuotasStorageName = "resourcequotas"
)

// storageClasses lists the stored StorageClasses, as kube's StorageClass lister does.
func (o *registryObjects) storageClasses() storedLister[storagev1.StorageClass] {
	return storedLister[storagev1.StorageClass]{objects: o, storageName: storageClassesStorageName, resource: storagev1.Resource("storageclass")}
}

// limitRanges lists the stored LimitRanges, as kube's LimitRange lister does.
func (o *registryObjects) limitRanges() storedLister[corev1.LimitRange] {
	return storedLister[corev1.LimitRange]{objects: o, storageName: limitRangesStorageName, resource: corev1.Resource("limitrange")}
}

// resourceQuotas lists the stored ResourceQuotas, as kube's ResourceQuota lister does.
func (o *registryObjects) resourceQuotas() storedLister[corev1.ResourceQuota] {
	return storedLister[corev1.ResourceQuota]{objects: o, storageName: resourceQuotasStorageName, resource: corev1.Resource("resourcequota")}
}

// storedLister lists the stored objects of one type, decoded as T.
type storedLister[T any] struct {
	objects     *registryObjects
	storageName string
	resource    schema.GroupResource // named in NotFound errors, as kube's listers name it
}

// list reads the objects selector selects, in namespace ("" for all or a cluster-scoped type).
func (l storedLister[T]) list(namespace string, selector labels.Selector) ([]*T, error) {
	res, ok := l.objects.types.StorageResources()[l.storageName]
	if !ok || l.objects.objects == nil {
		return nil, nil
	}
	var items []*T
	ref := registry.Ref{Resource: res, Namespace: namespace}
	_, err := l.objects.objects.List(context.Background(), ref, &internalversion.ListOptions{LabelSelector: selector}, func(o sqlstore.Object) error {
		item := new(T)
		if err := registry.UnmarshalStored(o.Value, item); err != nil {
			return err
		}
		items = append(items, item)
		return nil
	})
	return items, err
}

// get reads the object named name in namespace; a NotFound error when there is none.
func (l storedLister[T]) get(namespace, name string) (*T, error) {
	res, ok := l.objects.types.StorageResources()[l.storageName]
	if !ok || l.objects.objects == nil {
		return nil, apierrors.NewNotFound(l.resource, name)
	}
	stored, err := l.objects.objects.Get(context.Background(), registry.Ref{Resource: res, Namespace: namespace, Name: name}, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	item := new(T)
	return item, registry.UnmarshalStored(stored.Value, item)
}

// storageClassLister is kube's StorageClass lister, on the registry.
type storageClassLister struct {
	storagev1listers.StorageClassListerExpansion
	l storedLister[storagev1.StorageClass]
}

func (s storageClassLister) List(selector labels.Selector) ([]*storagev1.StorageClass, error) {
	return s.l.list("", selector)
}

func (s storageClassLister) Get(name string) (*storagev1.StorageClass, error) {
	return s.l.get("", name)
}

// namespacedLister lists the stored objects of a namespaced type, in namespace ("" for all).
type namespacedLister[T any] struct {
	l         storedLister[T]
	namespace string
}

func (s namespacedLister[T]) List(selector labels.Selector) ([]*T, error) {
	return s.l.list(s.namespace, selector)
}

func (s namespacedLister[T]) Get(name string) (*T, error) {
	return s.l.get(s.namespace, name)
}

// limitRangeLister is kube's LimitRange lister, on the registry.
type limitRangeLister struct {
	corev1listers.LimitRangeListerExpansion
	corev1listers.LimitRangeNamespaceListerExpansion
	namespacedLister[corev1.LimitRange]
}

func (s limitRangeLister) LimitRanges(namespace string) corev1listers.LimitRangeNamespaceLister {
	return limitRangeLister{namespacedLister: namespacedLister[corev1.LimitRange]{l: s.l, namespace: namespace}}
}

// resourceQuotaLister is kube's ResourceQuota lister, on the registry: the ResourceQuota plugin
// then counts from the status its last evaluation wrote, not from an informer's older copy.
type resourceQuotaLister struct {
	corev1listers.ResourceQuotaListerExpansion
	corev1listers.ResourceQuotaNamespaceListerExpansion
	namespacedLister[corev1.ResourceQuota]
}

func (s resourceQuotaLister) ResourceQuotas(namespace string) corev1listers.ResourceQuotaNamespaceLister {
	return resourceQuotaLister{namespacedLister: namespacedLister[corev1.ResourceQuota]{l: s.l, namespace: namespace}}
}

// informers is the informer factory kube's plugins get their listers from: the listers above
// for StorageClasses, LimitRanges and ResourceQuotas, always synced, and shared's informers for the rest.
func (o *registryObjects) informers(shared informers.SharedInformerFactory) informers.SharedInformerFactory {
	return registryInformers{SharedInformerFactory: shared, o: o}
}

type registryInformers struct {
	informers.SharedInformerFactory
	o *registryObjects
}

func (f registryInformers) Storage() storageinformers.Interface {
	return storageGroup{Interface: f.SharedInformerFactory.Storage(), o: f.o}
}

func (f registryInformers) Core() coreinformers.Interface {
	return coreGroup{Interface: f.SharedInformerFactory.Core(), o: f.o}
}

type storageGroup struct {
	storageinformers.Interface
	o *registryObjects
}

func (g storageGroup) V1() storagev1informers.Interface {
	return storageV1{Interface: g.Interface.V1(), o: g.o}
}

type storageV1 struct {
	storagev1informers.Interface
	o *registryObjects
}

func (v storageV1) StorageClasses() storagev1informers.TypedStorageClassInformer {
	return storageClassInformer{o: v.o}
}

type storageClassInformer struct {
	storagev1informers.TypedStorageClassInformer
	o *registryObjects
}

func (storageClassInformer) Informer() cache.SharedIndexInformer { return syncedInformer{} }
func (i storageClassInformer) Lister() storagev1listers.StorageClassLister {
	return storageClassLister{l: i.o.storageClasses()}
}

type coreGroup struct {
	coreinformers.Interface
	o *registryObjects
}

func (g coreGroup) V1() corev1informers.Interface { return coreV1{Interface: g.Interface.V1(), o: g.o} }

type coreV1 struct {
	corev1informers.Interface
	o *registryObjects
}

func (v coreV1) LimitRanges() corev1informers.TypedLimitRangeInformer {
	return limitRangeInformer{o: v.o}
}

type limitRangeInformer struct {
	corev1informers.TypedLimitRangeInformer
	o *registryObjects
}

func (limitRangeInformer) Informer() cache.SharedIndexInformer { return syncedInformer{} }
func (i limitRangeInformer) Lister() corev1listers.LimitRangeLister {
	return limitRangeLister{namespacedLister: namespacedLister[corev1.LimitRange]{l: i.o.limitRanges()}}
}

func (v coreV1) ResourceQuotas() corev1informers.TypedResourceQuotaInformer {
	return resourceQuotaInformer{o: v.o}
}

type resourceQuotaInformer struct {
	corev1informers.TypedResourceQuotaInformer
	o *registryObjects
}

func (resourceQuotaInformer) Informer() cache.SharedIndexInformer { return syncedInformer{} }
func (i resourceQuotaInformer) Lister() corev1listers.ResourceQuotaLister {
	return resourceQuotaLister{namespacedLister: namespacedLister[corev1.ResourceQuota]{l: i.o.resourceQuotas()}}
}

// syncedInformer is the informer of a lister on the registry: always synced.
type syncedInformer struct{ cache.SharedIndexInformer }

func (syncedInformer) HasSynced() bool { return true }
