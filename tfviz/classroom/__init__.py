"""Classroom mode: live sessions a class follows (``live``, with the teacher's state and its
checks in ``state`` and join codes and teacher keys in ``codes``) and what the class reports
(``catalog``: the exercise boxes and slips students' answers may name). No streamlit here;
``tfviz.ui.live`` and its ``live_*`` siblings put it on the pages."""
