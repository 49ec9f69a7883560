"""Classroom mode: live sessions a class follows (``live``) and what the class reports
(``catalog``: the exercise boxes and slips students' answers may name). No streamlit here;
``tfviz.ui.live`` puts it on the pages."""
