"""The services breadth runs on: the local stack of S3, MLflow and Prefect (`local`), the
credentials of a stack other machines reach (`auth`), and the processes breadth starts and
stops (`processes`). `auth` and `processes` sit at the bottom layer, `local` above tracking
(docs/design/architecture.md, "Layers").
"""
