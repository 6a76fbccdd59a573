// Writes golden protobuf bytes for the Rust spike, using k8s.io/api v0.37.1's generated
// marshalling and apimachinery's protobuf serializer (the code kube-apiserver runs).
//
//	go run . <out dir>
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/framer"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func ptr[T any](v T) *T { return &v }

// The realistic ConfigMap the Rust test builds too (keep the two in sync).
func configMap() *corev1.ConfigMap {
	created := metav1.NewTime(time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC))
	applied := metav1.NewTime(time.Date(2025, 3, 14, 15, 9, 27, 0, time.UTC))
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              "app-config",
			Namespace:         "default",
			UID:               "6f1c9c1e-8b7a-4c3e-9d2a-0f4b5e6a7b8c",
			ResourceVersion:   "123456",
			CreationTimestamp: created,
			Labels:            map[string]string{"app": "web", "tier": "frontend"},
			Annotations: map[string]string{
				"kubectl.kubernetes.io/last-applied-configuration": "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}\n",
				"note": "",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         "apps/v1",
				Kind:               "Deployment",
				Name:               "web",
				UID:                "0a1b2c3d-0000-4000-8000-000000000001",
				Controller:         ptr(true),
				BlockOwnerDeletion: ptr(false),
			}},
			Finalizers: []string{"example.com/cleanup"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{
					Manager:    "kubectl-client-side-apply",
					Operation:  metav1.ManagedFieldsOperationUpdate,
					APIVersion: "v1",
					Time:       &applied,
					FieldsType: "FieldsV1",
					FieldsV1:   &metav1.FieldsV1{Raw: []byte(`{"f:data":{".":{},"f:key":{}},"f:metadata":{"f:labels":{".":{},"f:app":{}}}}`)},
				},
				{
					Manager:     "controller",
					Operation:   metav1.ManagedFieldsOperationApply,
					APIVersion:  "v1",
					FieldsType:  "FieldsV1",
					FieldsV1:    &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:finalizers":{"v:\"example.com/cleanup\"":{}}}}`)},
					Subresource: "",
				},
			},
		},
		Data: map[string]string{
			"key":     "value",
			"multi":   "line1\nline2",
			"unicode": "h\u00e9llo \u2713",
			"empty":   "",
		},
		BinaryData: map[string][]byte{
			"bin":      {0, 1, 2, 0xff},
			"emptybin": {},
		},
		Immutable: ptr(false),
	}
}

// A second, minimal item for the list.
func minimal() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "empty", Namespace: "kube-system", ResourceVersion: "7"},
	}
}

func write(dir, name string, data []byte) {
	must(os.WriteFile(filepath.Join(dir, name), data, 0o644))
	fmt.Printf("%-24s %6d bytes\n", name, len(data))
}

func main() {
	dir := "out"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	must(os.MkdirAll(dir, 0o755))
	// The serializers kube-apiserver's codec factory builds for application/vnd.kubernetes.protobuf
	// (encoding takes the kind from the object's TypeMeta, so no scheme is needed here).
	ser := protobuf.NewSerializer(nil, nil)
	raw := protobuf.NewRawSerializer(nil, nil)
	envelope := func(obj runtime.Object) []byte {
		var b bytes.Buffer
		must(ser.Encode(obj, &b))
		return b.Bytes()
	}

	cm := configMap()
	pb, err := cm.Marshal()
	must(err)
	write(dir, "configmap.pb", pb)
	write(dir, "configmap.k8s", envelope(cm))
	js, err := json.Marshal(cm)
	must(err)
	write(dir, "configmap.json", js)

	list := &corev1.ConfigMapList{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "999", Continue: "abc", RemainingItemCount: ptr(int64(5))},
		Items:    []corev1.ConfigMap{*cm, *minimal()},
	}
	write(dir, "configmaplist.k8s", envelope(list))

	status := &metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure,
		Message:  "too old resource version: 1 (123456)",
		Reason:   metav1.StatusReasonExpired,
		Code:     410,
	}
	write(dir, "status.k8s", envelope(status))

	// A watch stream: length-delimited frames of bare WatchEvent messages whose object is the
	// full envelope (as apiserver's watchEncoder writes them).
	var stream bytes.Buffer
	fw := framer.NewLengthDelimitedFrameWriter(&stream)
	for _, ev := range []struct {
		typ string
		obj runtime.Object
	}{{"ADDED", cm}, {"ERROR", status}} {
		var frame bytes.Buffer
		must(raw.Encode(&metav1.WatchEvent{Type: ev.typ, Object: runtime.RawExtension{Raw: envelope(ev.obj)}}, &frame))
		_, err := fw.Write(frame.Bytes())
		must(err)
	}
	write(dir, "watch.frames", stream.Bytes())

	// Scalar special types on their own.
	mt := metav1.NewMicroTime(time.Date(2025, 3, 14, 15, 9, 26, 123456789, time.UTC))
	b, err := mt.Marshal()
	must(err)
	write(dir, "microtime.pb", b)
	t := metav1.NewTime(time.Date(2025, 3, 14, 15, 9, 26, 987654321, time.UTC))
	b, err = t.Marshal()
	must(err)
	write(dir, "time_nanos.pb", b)
	i := intstr.FromInt32(8080)
	b, err = i.Marshal()
	must(err)
	write(dir, "intorstring_int.pb", b)
	s := intstr.FromString("http")
	b, err = s.Marshal()
	must(err)
	write(dir, "intorstring_str.pb", b)
	q := resource.MustParse("1500m")
	b, err = q.Marshal()
	must(err)
	write(dir, "quantity.pb", b)
}
