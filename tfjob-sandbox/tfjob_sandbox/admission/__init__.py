"""Admission: CRDs and their structural schemas, the TFJob CRD, the training operator's TFJob webhook."""
