package changes_test

import (
	"fmt"

	"github.com/gpu-rightsizing/recommender/internal/patcher/changes"
)

func ExampleFile_Diff() {
	old := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: tgi
spec:
  template:
    metadata:
      annotations:
        gpu-fraction: "0.5"  # set by hand
    spec:
      containers:
      - name: tgi
        image: ghcr.io/huggingface/text-generation-inference:2.4` // no final newline
	new := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: tgi
spec:
  template:
    metadata:
      annotations:
        gpu-fraction: "0.25"  # set by hand
    spec:
      schedulerName: kai-scheduler
      containers:
      - name: tgi
        image: ghcr.io/huggingface/text-generation-inference:2.4`
	f := changes.File{Path: "tgi.yaml", Old: []byte(old), New: []byte(new)}
	fmt.Print(f.Diff())
	// Output:
	// --- a/tgi.yaml
	// +++ b/tgi.yaml
	// @@ -6,8 +6,9 @@
	//    template:
	//      metadata:
	//        annotations:
	// -        gpu-fraction: "0.5"  # set by hand
	// +        gpu-fraction: "0.25"  # set by hand
	//      spec:
	// +      schedulerName: kai-scheduler
	//        containers:
	//        - name: tgi
	//          image: ghcr.io/huggingface/text-generation-inference:2.4
	// \ No newline at end of file
}
