"""_system"""
