"""Parses a ``floe serve`` planTableScan response with Iceberg Java 1.10's own parser (run by the java-iceberg
venv's Python through ``Jsql.python``; never imported by the tests). Java 1.10's REST client does not plan
on the server itself, but the classes it will use to read the answer are in its runtime jar.

    python _java_plan_parser.py --jars jars.txt --metadata metadata.json --response plan.json

Prints ``{"status": ..., "tasks": [[data file, [delete files...]], ...]}``.
"""

import argparse
import json


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jars", required=True)
    parser.add_argument("--metadata", required=True)
    parser.add_argument("--response", required=True)
    args = parser.parse_args()
    from pyspark.sql import SparkSession

    with open(args.jars) as listing:
        jars = [line.strip() for line in listing if line.strip()]
    spark = (
        SparkSession.builder.master("local[1]").config("spark.jars", ",".join(jars))
        .config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1").getOrCreate()
    )
    jvm = spark._jvm
    with open(args.metadata) as f:
        text = f.read()
    metadata = jvm.org.apache.iceberg.TableMetadataParser.fromJson(text)
    spec_field_ids = {
        spec["spec-id"]: [str(field["field-id"]) for field in spec["fields"]]
        for spec in json.loads(text)["partition-specs"]
    }
    with open(args.response) as f:
        answer = json.load(f)
    # Iceberg 1.10 reads content files as it wrote them before aligning with the REST spec (which floe serve
    # follows, as Java does from apache/iceberg#14739 and #14702 on): a content as its Java enum name
    # ("POSITION_DELETES", not "position-deletes") and a partition as an object keyed by partition field id
    # (not an array of values in the spec's order).
    def as_java_1_10(file):  # type: ignore[no-untyped-def]
        file["content"] = file["content"].upper().replace("-", "_")
        if isinstance(file.get("partition"), list):
            file["partition"] = dict(zip(spec_field_ids[file["spec-id"]], file["partition"]))

    for file in answer.get("delete-files", []):
        as_java_1_10(file)
    for task in answer.get("file-scan-tasks", []):
        as_java_1_10(task["data-file"])
    node = jvm.org.apache.iceberg.util.JsonUtil.mapper().readTree(json.dumps(answer))
    response = jvm.org.apache.iceberg.rest.responses.PlanTableScanResponseParser.fromJson(
        node, metadata.specsById(), True
    )
    tasks = []
    for task in response.fileScanTasks():
        tasks.append([task.file().location(), sorted(d.location() for d in task.deletes())])
    print(json.dumps({"status": response.planStatus().status(), "tasks": sorted(tasks)}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
